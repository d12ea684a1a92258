package gateway

import (
	"net"
	"net/http"
	"net/http/pprof"
	"strings"

	"github.com/nanobot-go/nanobot/internal/memprof"
	"github.com/nanobot-go/nanobot/internal/owner"
)

// mountPprof serves Go's profiles under /debug/pprof/ (gateway.pprof) to
// requests that carry the instance's access token as a bearer key, and
// only from loopback addresses whatever the bind address: profiles show
// memory contents such as message text, and a loopback peer alone proves
// nothing (the agent's own commands connect from there too). Heap profiles
// sample allocations from this call on: until then sampling is off
// (internal/memprof).
func mountPprof(mux *http.ServeMux, key *owner.Key) {
	memprof.Enable()
	local := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			host, _, err := net.SplitHostPort(r.RemoteAddr)
			if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
				http.Error(w, "profiles are served to loopback clients only", http.StatusForbidden)
				return
			}
			tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || key == nil || !key.Check(strings.TrimSpace(tok)) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="nanobot"`)
				http.Error(w, "profiles need the instance's access token: send \"Authorization: Bearer $(nanobot webui token)\"", http.StatusUnauthorized)
				return
			}
			h(w, r)
		}
	}
	mux.HandleFunc("GET /debug/pprof/", local(pprof.Index))
	mux.HandleFunc("GET /debug/pprof/cmdline", local(pprof.Cmdline))
	mux.HandleFunc("GET /debug/pprof/profile", local(pprof.Profile))
	mux.HandleFunc("GET /debug/pprof/symbol", local(pprof.Symbol))
	mux.HandleFunc("GET /debug/pprof/trace", local(pprof.Trace))
}
