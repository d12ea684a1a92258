package channels

import (
	"net/http"
	"net/url"
)

// LoopbackBrowser reports whether r comes from a browser (or a script) on
// this machine that asked for a loopback name: the peer is a loopback
// address, the Host is a loopback name (IsLoopbackHost), no proxy header is
// set, and a page's Origin, when there is one, is a loopback name too. A
// page on another site whose name was re-pointed at 127.0.0.1 (DNS
// rebinding) or a request through a reverse proxy is not. Callers check
// first that their server listens on loopback only.
func LoopbackBrowser(r *http.Request) bool {
	if !IsLoopbackPeer(r.RemoteAddr) || !IsLoopbackHost(HostName(r.Host)) {
		return false
	}
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-Ip"} {
		if r.Header.Get(h) != "" {
			return false
		}
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true // not a browser page (curl, a script on this machine)
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && IsLoopbackHost(HostName(u.Host))
}
