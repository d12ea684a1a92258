package gateway

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// Early is the gateway's HTTP listener, opened before anything else is
// built so that a supervisor sees the process up at once: it answers
// /healthz with 200 and every other path with 503 "starting" until the
// gateway it is handed to (Options.Early) has been assembled and Run puts
// the full handler in front. /healthz says only that the process is alive;
// /readyz says when it is assembled and running. Its methods are safe for
// concurrent use.
type Early struct {
	ln  net.Listener
	srv *http.Server
	// served carries Serve's return once serving has started.
	served chan error
	// active is the full handler, once Run puts it in front.
	active atomic.Pointer[http.Handler]
}

// ListenEarly opens host:port (gateway.host, gateway.port) and serves the
// early handler on it. A port in use fails here, before anything else is
// done. The caller hands the result to New through Options.Early, which
// takes it over, or closes it.
func ListenEarly(host string, port int) (*Early, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("gateway: listen on %s (gateway.host/gateway.port): %w", addr, err)
	}
	e := newEarly(ln)
	e.serve()
	return e, nil
}

// newEarly wraps ln without serving yet.
func newEarly(ln net.Listener) *Early {
	e := &Early{ln: ln}
	e.srv = &http.Server{Handler: http.HandlerFunc(e.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
	return e
}

// serve starts serving, once.
func (e *Early) serve() chan error {
	if e.served == nil {
		e.served = make(chan error, 1)
		go func() { e.served <- e.srv.Serve(e.ln) }()
	}
	return e.served
}

// Addr is the address it listens on.
func (e *Early) Addr() net.Addr { return e.ln.Addr() }

// Close stops serving and closes the listener; for a caller that never
// handed it to New (New closes it itself when it fails).
func (e *Early) Close() {
	_ = e.srv.Close()
	if e.served != nil {
		<-e.served
	} else {
		_ = e.ln.Close()
	}
}

// serveHTTP hands a request to the full handler once Run has put it in
// front; before that the process is up (/healthz) but not ready.
func (e *Early) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if h := e.active.Load(); h != nil {
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
