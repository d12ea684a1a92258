package gateway

import "github.com/nanobot-go/nanobot/configs"

// adminLists collects each channel's admins.
func adminLists(cfg *configs.Config) map[string][]string {
	admins := map[string][]string{}
	for _, name := range cfg.Channels.Names() {
		admins[name] = cfg.Channels.Common(name).Admins
	}
	return admins
}
