package web

import (
	"net/http"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/internal/owner"
)

// Factory registers the web chat: on unless channels.web.enabled is false,
// its token stored in the instance's state folder.
func Factory() channels.Factory {
	f := channels.NewFactory("web", DefaultConfig, func(cfg Config, d channels.Deps) (*Channel, error) {
		return New(cfg, Options{TokenFile: owner.Path(d.Paths.State), Log: d.Log})
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

// Notice implements channels.Noticer: where the chat is. The way in is
// the workbench's sign-in link, which the gateway prints itself; the
// token stays in the state folder for the chat page at /chat and scripts.
func (c *Channel) Notice(base string) string {
	c.log.Info("web chat ready", "url", base+"/chat")
	return ""
}
