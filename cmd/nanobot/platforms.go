package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/feishu"
	"github.com/nanobot-go/nanobot/channels/slack"
	"github.com/nanobot-go/nanobot/channels/telegram"
	"github.com/nanobot-go/nanobot/channels/web"
	"github.com/nanobot-go/nanobot/configs"
)

// The platform adapters built into the binary. The web chat, Telegram,
// Slack and Feishu are always in (the setup wizard and `nanobot channels
// login` use them directly); each other adapter is registered by its own
// file, platform_<name>.go, which the build tag nanobot_omit_<name> leaves
// out, so people who build their own binary can drop the platforms they do
// not use (WhatsApp alone is about 4.5 MB of it). The release build keeps
// every one. See docs/install.md.

// omittablePlatforms names every adapter a build tag can leave out.
var omittablePlatforms = []string{
	"dingtalk", "discord", "email", "irc", "line", "matrix", "mattermost",
	"mochat", "onebot", "qq", "signal", "teams", "webhook", "wecom", "weixin",
	"whatsapp", "xmpp",
}

// optionalPlatforms holds the factories of the omittable adapters this
// binary has. The init functions of the platform_*.go files fill it (it is
// the one table the build tags can shape); it is never changed after.
var optionalPlatforms = map[string]func() channels.Factory{}

// newChannelRegistry lists the platform adapters. It is the one place that
// knows them all: one left out of the build is registered as such, so
// enabling it stops the start with an error that says why.
func newChannelRegistry() *channels.Registry {
	r := channels.NewRegistry()
	must(r.Register("web", web.Factory()))
	must(r.Register("telegram", telegram.Factory()))
	must(r.Register("slack", slack.Factory()))
	must(r.Register("feishu", feishu.Factory()))
	for _, name := range omittablePlatforms {
		f := notBuilt(name)
		if factory, ok := optionalPlatforms[name]; ok {
			f = factory()
		}
		must(r.Register(name, f))
	}
	return r
}

// notBuilt is the factory of a platform the binary was built without: the
// config check warns with the same words the failed start gives.
func notBuilt(name string) channels.Factory {
	why := fmt.Sprintf("this nanobot was built without it (go build -tags nanobot_omit_%s), so the gateway does not start while it is enabled; use a release binary or build without that tag", name)
	return channels.Factory{
		New: func(configs.ChannelsConfig, channels.Deps) (channels.Channel, error) {
			return nil, errors.New(why)
		},
		ConfigType: configs.NotBuilt{Why: why},
	}
}

// platformTypes is every channel's config type, for checking config.json.
func platformTypes() map[string]any {
	return newChannelRegistry().ConfigTypes()
}

// channelProblems builds each enabled channel as the gateway's start would,
// without running any, and returns why each that would stop the start
// cannot be built (a missing token, a platform left out of the build), by
// channel name, on one line. Building is free of side effects: adapters connect and
// open their stores only when they run.
func channelProblems(c *configs.Config) map[string]error {
	r := newChannelRegistry()
	out := map[string]error{}
	for _, name := range r.Enabled(c.Channels) {
		if _, err := r.BuildOne(name, c.Channels, channels.Deps{}); err != nil {
			out[name] = errors.New(strings.ReplaceAll(err.Error(), "\n", "; "))
		}
	}
	return out
}
