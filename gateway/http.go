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

// listenEarly opens the HTTP listener, unless the caller brought one, and
// serves the early handler on it at once. A port in use fails New before
// anything else is done.
func (g *Gateway) listenEarly() error {
	g.ln = g.o.Listener
	if g.ln != nil {
		return nil
	}
	addr := net.JoinHostPort(g.cfg.Gateway.Host, fmt.Sprint(g.cfg.Gateway.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("gateway: listen on %s (gateway.host/gateway.port): %w", addr, err)
	}
	g.ln = ln
	g.srv = g.newServer()
	g.served = make(chan error, 1)
	go func() { g.served <- g.srv.Serve(ln) }()
	return nil
}

// closeEarly stops the early server when New fails; it closes the
// listener New opened.
func (g *Gateway) closeEarly() {
	if g.served != nil {
		_ = g.srv.Close()
		<-g.served
	}
}

func (g *Gateway) newServer() *http.Server {
	return &http.Server{Handler: http.HandlerFunc(g.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
}

// serveHTTP hands a request to the full handler once Run has put it in
// front; before that the process is up (/healthz) but not ready.
func (g *Gateway) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if h := g.active.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	if r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		_, _ = w.Write([]byte("ok\n"))
		return
	}
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte("starting\n"))
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
		mountPprof(mux)
		g.log.Info("profiles served at /debug/pprof/ to loopback clients (gateway.pprof)")
	}
	for _, c := range g.chans {
		if wh, ok := c.(channels.WebhookHandler); ok && wh.WebhookPath() != "" {
			mux.Handle(wh.WebhookPath(), wh.WebhookHandler())
			g.log.Debug("mounted", "channel", c.Name(), "path", wh.WebhookPath())
		}
	}
	g.full = hostCheck(g.cfg.Gateway.AllowedHosts, isLoopbackAddr(g.ln.Addr()), g.log, mux)
	if g.srv == nil {
		g.srv = g.newServer()
	}
	return nil
}

func (g *Gateway) readyz(w http.ResponseWriter, _ *http.Request) {
	ready, bad := g.mgr.Ready()
	if reason := g.dl.storageProblem(); reason != "" {
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
		g.active.Store(&g.full)
		errc := g.served
		if errc == nil {
			errc = make(chan error, 1)
			go func() { errc <- g.srv.Serve(g.ln) }()
		}
		select {
		case err := <-errc:
			return fmt.Errorf("http server: %w", err)
		case <-ctx.Done():
		}
		shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = g.srv.Shutdown(shutCtx)
		return nil
	}}
}

// announce logs that the gateway is ready, prints what channels want the
// operator to see on the terminal (the web chat's access token: the
// terminal, not the log, which is kept and shipped), and calls Ready.
func (g *Gateway) announce() {
	addr := g.ln.Addr().String()
	base := "http://" + addr
	g.log.Info("gateway ready", "addr", base, "channels", len(g.chans), "workspace", g.o.Paths.Workspace)
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
