package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/tools/web"
)

// egress is the HTTP proxy on loopback that Chromium sends all its
// traffic through (--proxy-server, loopback included). It connects with
// the SSRF guard's dialer, which resolves the host itself and dials only
// an address it checked, so a DNS answer that changes between Chromium's
// request and the connection (DNS rebinding) still cannot reach a private
// address; and it covers what request interception on a tab does not
// see: other tabs a page opens, workers, cross-site frames, WebSockets.
//
// It is safe for concurrent use; Close stops it and every tunnel.
type egress struct {
	guard *web.SSRFGuard
	log   *slog.Logger
	ln    net.Listener
	srv   *http.Server
	tr    *http.Transport
	rp    *httputil.ReverseProxy

	mu      sync.Mutex
	tunnels map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// dialTimeout bounds one connection the proxy makes for Chromium.
const dialTimeout = 15 * time.Second

// startEgress listens on 127.0.0.1 on a free port and serves.
func startEgress(guard *web.SSRFGuard, log *slog.Logger) (*egress, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("browser: egress proxy: %w", err)
	}
	e := &egress{guard: guard, log: log, ln: ln, tunnels: map[net.Conn]struct{}{}}
	e.tr = &http.Transport{
		DialContext:           e.dial,
		MaxIdleConns:          20,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
	}
	e.rp = &httputil.ReverseProxy{
		// The request is already absolute (a proxy request); Rewrite
		// drops the X-Forwarded-* headers, so the page's server learns
		// nothing about this host.
		Rewrite:      func(*httputil.ProxyRequest) {},
		Transport:    e.tr,
		ErrorHandler: e.fail,
	}
	e.srv = &http.Server{Handler: e, ReadHeaderTimeout: 30 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	e.wg.Go(func() { _ = e.srv.Serve(ln) })
	return e, nil
}

// addr is the proxy's host:port.
func (e *egress) addr() string { return e.ln.Addr().String() }

func (e *egress) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	return e.guard.DialContext(ctx, network, addr)
}

func (e *egress) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		e.tunnel(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Scheme != "http" {
		http.Error(w, "nanobot browser proxy: only absolute http:// requests and CONNECT", http.StatusBadRequest)
		return
	}
	e.rp.ServeHTTP(w, r)
}

// fail answers a request the proxy could not complete: 403 for a
// destination the guard refused, 502 otherwise.
func (e *egress) fail(w http.ResponseWriter, r *http.Request, err error) {
	var blocked *web.BlockedError
	if errors.As(err, &blocked) {
		e.log.Info("browser: connection refused by the SSRF policy", "host", blocked.Host, "reason", blocked.Reason)
		http.Error(w, "nanobot: "+blocked.Error(), http.StatusForbidden)
		return
	}
	http.Error(w, "nanobot browser proxy: "+err.Error(), http.StatusBadGateway)
}

// tunnel serves CONNECT (https:// and wss://): dial through the guard,
// then copy bytes both ways until either side closes.
func (e *egress) tunnel(w http.ResponseWriter, r *http.Request) {
	up, err := e.dial(r.Context(), "tcp", r.Host)
	if err != nil {
		e.fail(w, r, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "nanobot browser proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	down, _, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !e.track(up, down) {
		up.Close()
		down.Close()
		return
	}
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		e.untrack(up, down)
		return
	}
	e.wg.Go(func() {
		defer e.untrack(up, down)
		done := make(chan struct{})
		go func() {
			_, _ = io.Copy(up, down)
			closeWrite(up)
			close(done)
		}()
		_, _ = io.Copy(down, up)
		closeWrite(down)
		<-done
	})
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// track registers a tunnel's two connections so Close can end them; false
// once the proxy is closed.
func (e *egress) track(conns ...net.Conn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	for _, c := range conns {
		e.tunnels[c] = struct{}{}
	}
	return true
}

func (e *egress) untrack(conns ...net.Conn) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
		delete(e.tunnels, c)
	}
}

// Close stops the proxy, ends every tunnel and waits for its goroutines.
func (e *egress) Close() error {
	e.mu.Lock()
	e.closed = true
	for c := range e.tunnels {
		_ = c.Close()
	}
	e.mu.Unlock()
	err := e.srv.Close()
	e.tr.CloseIdleConnections()
	e.wg.Wait()
	return err
}
