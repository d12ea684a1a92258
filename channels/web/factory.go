package web

import (
	"fmt"
	"net/http"
	"path/filepath"

	"github.com/nanobot-go/nanobot/channels"
)

// Factory registers the web chat: on unless channels.web.enabled is false,
// its token stored in the instance's state folder.
func Factory() channels.Factory {
	f := channels.NewFactory("web", DefaultConfig, func(cfg Config, d channels.Deps) (*Channel, error) {
		return New(cfg, Options{Loopback: d.Loopback, TokenFile: filepath.Join(d.Paths.State, "web_token"), Log: d.Log})
	})
	f.OnByDefault = true
	return f
}

var (
	_ channels.WebhookHandler = (*Channel)(nil)
	_ channels.Noticer        = (*Channel)(nil)
)

// WebhookPath implements channels.WebhookHandler: the chat page and its
// WebSocket are served from the root.
func (c *Channel) WebhookPath() string { return "/" }

// WebhookHandler implements channels.WebhookHandler.
func (c *Channel) WebhookHandler() http.Handler { return c.Handler() }

// Notice implements channels.Noticer: where the chat is, and the access
// token when one is needed.
func (c *Channel) Notice(base string) string {
	if !c.tokenAlways {
		// This machine's browser goes without the token; any other way in
		// (allowedHosts, a proxy) reads it from the state folder.
		c.log.Info("web chat open to this machine's browser", "url", base+"/")
		return fmt.Sprintf("web chat: %s/", base)
	}
	c.log.Info("web chat needs its access token (printed on the terminal, stored in the state folder's web_token)", "url", base+"/")
	return fmt.Sprintf("web chat: %s/  (access token: %s)", base, c.token)
}
