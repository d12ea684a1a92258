package gateway

import (
	"fmt"
	"net/http"

	"github.com/nanobot-go/nanobot/gateway/webui"
)

// mountWebUI serves the web workbench at / (its API under /api/) on this
// process's HTTP server. Beyond loopback it needs gateway.webui.password:
// without it New fails rather than open the owner's pages to the network.
func (g *Gateway) mountWebUI(mux *http.ServeMux) error {
	if !g.runsChannels() {
		return nil // a worker serves health and metrics only
	}
	w, err := webui.New(webui.Options{
		PasswordHash: g.cfg.Gateway.WebUI.Password, Loopback: g.loopback(),
		Sessions: g.be.sessions(), Log: g.log.With("component", "webui"),
	})
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	w.Mount(mux)
	return nil
}
