package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/nanobot-go/nanobot/channels"
)

// listenEarly takes over the caller's early listener, or wraps the
// caller's plain listener (served from Run on), or opens and serves one
// itself. A port in use fails New before anything else is done.
func (g *Gateway) listenEarly() error {
	switch {
	case g.o.Early != nil:
		g.early = g.o.Early
	case g.o.Listener != nil:
		g.early = newEarly(g.o.Listener, g.o.httpLimits)
		g.ln = g.o.Listener
		return nil
	default:
		e, err := ListenEarly(g.cfg.Gateway.Host, g.cfg.Gateway.Port)
		if err != nil {
			return err
		}
		g.early = e
	}
	g.ln = g.early.ln
	g.ownsLn = true
	return nil
}

// closeEarly stops the early server when New fails; it closes the
// listener New opened or was handed as Options.Early.
func (g *Gateway) closeEarly() {
	if g.ownsLn {
		g.early.Close()
	}
}

// buildHTTP builds the HTTP handler: health, readiness, metrics, status,
// profiles (opt-in), and the routes of channels that receive over HTTP
// (webhooks, the web chat). Run puts it in front.
func (g *Gateway) buildHTTP() error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", g.readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(g.metrics.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /api/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(g.Status(r.Context()))
	})
	if err := g.mountWebUI(mux); err != nil {
		return err
	}
	if g.cfg.Gateway.Pprof {
		mountPprof(mux, g.owner)
		g.log.Info("profiles served at /debug/pprof/ to loopback clients with the access token (gateway.pprof)")
	}
	for _, c := range g.chans {
		if wh, ok := c.(channels.WebhookHandler); ok && wh.WebhookPath() != "" {
			mux.Handle(wh.WebhookPath(), wh.WebhookHandler())
			g.log.Debug("mounted", "channel", c.Name(), "path", wh.WebhookPath())
		}
	}
	g.full = hostCheck(g.cfg.Gateway.AllowedHosts, isLoopbackAddr(g.ln.Addr()), g.log, mux)
	return nil
}

func (g *Gateway) readyz(w http.ResponseWriter, _ *http.Request) {
	ready, bad := g.mgr.Ready()
	if reason := g.dl.storageProblem(); reason != "" {
		ready, bad = false, append(bad, reason)
	}
	if reason := g.be.unready(); reason != "" {
		ready, bad = false, append(bad, reason)
	}
	w.Header().Set("Content-Type", "text/plain")
	if !ready || g.stopping.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		for _, s := range bad {
			_, _ = fmt.Fprintln(w, s)
		}
		return
	}
	_, _ = w.Write([]byte("ready\n"))
}

// httpService serves until stopped; it is stopped last, so /readyz
// answers "not ready" while the rest shuts down.
func (g *Gateway) httpService() service {
	return service{name: "http", run: func(ctx context.Context) error {
		g.early.active.Store(&g.full)
		errc := g.early.serve()
		select {
		case err := <-errc:
			return fmt.Errorf("http server: %w", err)
		case <-ctx.Done():
		}
		shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = g.early.srv.Shutdown(shutCtx)
		return nil
	}}
}

// SignInTTL is how long the sign-in link printed at start-up works.
const SignInTTL = 15 * time.Minute

// announce logs that the gateway is ready, prints what the operator needs
// on Stderr (the workbench's address; with Options.SignInLink, a one-time
// sign-in link: the terminal, never the log, which is kept, shipped and
// shown in the workbench), and calls Ready.
func (g *Gateway) announce() {
	addr := g.ln.Addr().String()
	base := "http://" + addr
	g.log.Info("gateway ready", "addr", base, "channels", len(g.chans), "workspace", g.o.Paths.Workspace)
	if g.signIn && g.owner != nil {
		if g.o.SignInLink {
			fmt.Fprintf(g.o.Stderr, "workbench: %s/#login=%s\n  (a one-time sign-in link, valid %s; `nanobot webui open` makes another)\n",
				browserBase(g.ln.Addr()), g.owner.LoginCode(SignInTTL), SignInTTL)
		} else {
			fmt.Fprintf(g.o.Stderr, "workbench: %s/ (`nanobot webui open` signs you in with a one-time link)\n", browserBase(g.ln.Addr()))
		}
	}
	for _, c := range g.chans {
		if n, ok := c.(channels.Noticer); ok {
			if line := n.Notice(base); line != "" {
				fmt.Fprintln(g.o.Stderr, line)
			}
		}
	}
	if g.o.Ready != nil {
		g.o.Ready(addr)
	}
}

// browserBase is the address a browser on this machine uses for a listener:
// a wildcard bind (0.0.0.0, ::) is reached at 127.0.0.1.
func browserBase(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return "http://" + a.String()
	}
	if ta.IP.IsUnspecified() {
		return fmt.Sprintf("http://127.0.0.1:%d", ta.Port)
	}
	return "http://" + ta.String()
}
