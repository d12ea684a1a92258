package gateway

import (
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/nanobot-go/nanobot/channels"
)

// hostCheck serves only requests whose Host header names this gateway, so a
// web page on another site cannot reach it by re-pointing its own DNS name
// at the gateway's address (DNS rebinding: the browser then treats the
// gateway as that site and lets the page read answers and open sockets).
//
// On a loopback bind (loopback true) the names served are the loopback ones
// (localhost, *.localhost, 127.0.0.0/8, ::1) and allowed. On other binds an
// empty allowed serves every name, as before (there is no way to know the
// names a LAN or proxy uses); a non-empty one serves loopback names, IP
// literals (a rebinding page always has a DNS name) and allowed. Entries of
// allowed are host names without port; "*.example.com" matches subdomains
// and "*" switches the check off.
//
// /healthz and /readyz stay open to any Host: they change nothing and
// reveal only "ok" or the names of unready channels, and orchestrators
// probe them by pod IP or service name. Everything else (the web chat and
// its WebSocket, /api/status, /metrics, channel webhooks, pprof) is checked.
// Refused requests get 421 Misdirected Request and a warn log line.
func hostCheck(allowed []string, loopback bool, log *slog.Logger, next http.Handler) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var exact, suffixes []string
	for _, a := range allowed {
		a = channels.HostName(a)
		switch {
		case a == "*":
			return next
		case strings.HasPrefix(a, "*."):
			suffixes = append(suffixes, a[1:])
		case a != "":
			exact = append(exact, a)
		}
	}
	if !loopback && len(exact)+len(suffixes) == 0 {
		return next
	}
	served := func(name string) bool {
		if channels.IsLoopbackHost(name) {
			return true
		}
		if !loopback && net.ParseIP(name) != nil {
			return true
		}
		for _, e := range exact {
			if name == e {
				return true
			}
		}
		for _, s := range suffixes {
			if strings.HasSuffix(name, s) && len(name) > len(s) {
				return true
			}
		}
		return false
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		name := channels.HostName(r.Host)
		if name != "" && served(name) {
			next.ServeHTTP(w, r)
			return
		}
		shown := r.Host
		if len(shown) > 100 {
			shown = shown[:100] + "…"
		}
		log.Warn("request for a host this gateway does not serve refused (add it to gateway.allowedHosts if it is yours)",
			"host", shown, "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusMisdirectedRequest)
		_, _ = w.Write([]byte("421 misdirected request: this gateway does not serve that host name (see gateway.allowedHosts)\n"))
	})
}
