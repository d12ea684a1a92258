package gateway

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nanobot-go/nanobot/internal/reqbody"
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
	e := newEarly(ln, httpLimits{})
	e.serve()
	return e, nil
}

// httpLimits bound what one client can make the public server wait for
// and hold: this port takes platform webhooks from the internet, so a
// client that opens connections and then sends slowly or not at all
// (slowloris) must lose them after a bounded time, not keep them forever.
// There is deliberately no server-wide ReadTimeout or WriteTimeout: they
// would also cut the answers that are meant to stay open (server-sent
// events on /v1, the web chat's websocket). Zero fields take the
// defaults; tests shorten them.
type httpLimits struct {
	// header bounds reading a request's line and headers (default 10 s).
	header time.Duration
	// idle bounds how long a kept-alive connection may wait for its next
	// request (default 120 s: longer than the usual 60 s of reverse
	// proxies and load balancers, so they, not we, close an idle
	// connection and never reuse one we are closing).
	idle time.Duration
	// body bounds the arrival of a request body (default 30 s), extended
	// by a second for every bodyRate bytes that arrived (default 16 KiB):
	// see reqbody.Deadline.
	body     time.Duration
	bodyRate int64
	// maxHeaderBytes bounds a request's headers (default 64 KiB; net/http
	// would allow 1 MiB).
	maxHeaderBytes int
}

// withDefaults fills the zero fields with the defaults.
func (l httpLimits) withDefaults() httpLimits {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.header, 10*time.Second)
	def(&l.idle, 120*time.Second)
	def(&l.body, 30*time.Second)
	if l.bodyRate <= 0 {
		l.bodyRate = 16 << 10
	}
	if l.maxHeaderBytes <= 0 {
		l.maxHeaderBytes = 64 << 10
	}
	return l
}

// newEarly wraps ln without serving yet.
func newEarly(ln net.Listener, lim httpLimits) *Early {
	lim = lim.withDefaults()
	e := &Early{ln: ln}
	e.srv = &http.Server{
		Handler:           reqbody.Deadline(http.HandlerFunc(e.serveHTTP), lim.body, lim.bodyRate),
		ReadHeaderTimeout: lim.header,
		IdleTimeout:       lim.idle,
		MaxHeaderBytes:    lim.maxHeaderBytes,
	}
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
