package gateway

import (
	"net"
	"net/http"
	"net/http/pprof"

	"github.com/nanobot-go/nanobot/internal/memprof"
)

// mountPprof serves Go's profiles under /debug/pprof/ (gateway.pprof),
// answering only requests from loopback addresses whatever the bind
// address: profiles show memory contents such as message text. Heap
// profiles sample allocations from this call on: until then sampling is off
// (internal/memprof).
func mountPprof(mux *http.ServeMux) {
	memprof.Enable()
	local := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			host, _, err := net.SplitHostPort(r.RemoteAddr)
			if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
				http.Error(w, "profiles are served to loopback clients only", http.StatusForbidden)
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
