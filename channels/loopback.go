package channels

import (
	"net"
	"strings"
)

// HostName returns the host part of a Host header or URL authority
// ("Example.COM:8080" -> "example.com", "[::1]:80" -> "::1"): lower case,
// without port, brackets or one trailing dot. Safe for any input.
func HostName(hostport string) string {
	h := strings.TrimSpace(hostport)
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// IsLoopbackHost reports whether a host name (see HostName) can only mean
// this machine: "localhost", a name under ".localhost" (RFC 6761: browsers
// resolve these to loopback without asking DNS, so a rebinding attacker
// cannot own one), or a loopback IP literal (127.0.0.0/8, ::1). A DNS name
// that merely resolves to 127.0.0.1 is not loopback: that is the rebinding
// attack.
func IsLoopbackHost(name string) bool {
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// IsLoopbackPeer reports whether an http.Request.RemoteAddr is a loopback
// address.
func IsLoopbackPeer(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
