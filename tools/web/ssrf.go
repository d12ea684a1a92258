package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// BlockedError reports a destination the SSRF guard refuses.
type BlockedError struct {
	// Host is the host as written in the URL.
	Host string
	// Addr is the address it resolved to (invalid when the host itself
	// was refused, e.g. an ambiguous numeric form).
	Addr netip.Addr
	// Reason says why, e.g. "loopback address".
	Reason string
}

func (e *BlockedError) Error() string {
	if e.Addr.IsValid() && e.Addr.String() != e.Host {
		return fmt.Sprintf("refusing to connect to %s (%s): %s; only public internet addresses may be fetched (an administrator can allow a network with tools.ssrfAllowlist)", e.Host, e.Addr, e.Reason)
	}
	return fmt.Sprintf("refusing to connect to %s: %s; only public internet addresses may be fetched (an administrator can allow a network with tools.ssrfAllowlist)", e.Host, e.Reason)
}

// blockedRange is a non-public range and why it is refused.
type blockedRange struct {
	prefix netip.Prefix
	reason string
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// blockedRanges are every range that is not the public internet. The
// IPv6 transition ranges that embed IPv4 addresses (NAT64, 6to4, Teredo,
// IPv4-compatible) are refused as a whole; IPv4-mapped addresses are
// unmapped and judged as IPv4.
var blockedRanges = []blockedRange{
	{mustPrefix("0.0.0.0/8"), "\"this network\" address (0.0.0.0/8)"},
	{mustPrefix("10.0.0.0/8"), "private network address"},
	{mustPrefix("100.64.0.0/10"), "carrier-grade NAT address"},
	{mustPrefix("127.0.0.0/8"), "loopback address"},
	{mustPrefix("169.254.0.0/16"), "link-local address (includes cloud metadata services)"},
	{mustPrefix("172.16.0.0/12"), "private network address"},
	{mustPrefix("192.0.0.0/24"), "IETF protocol assignment address"},
	{mustPrefix("192.0.2.0/24"), "documentation address"},
	{mustPrefix("192.88.99.0/24"), "6to4 relay address"},
	{mustPrefix("192.168.0.0/16"), "private network address"},
	{mustPrefix("198.18.0.0/15"), "benchmarking address"},
	{mustPrefix("198.51.100.0/24"), "documentation address"},
	{mustPrefix("203.0.113.0/24"), "documentation address"},
	{mustPrefix("224.0.0.0/4"), "multicast address"},
	{mustPrefix("255.255.255.255/32"), "broadcast address"},
	{mustPrefix("240.0.0.0/4"), "reserved address"},
	{mustPrefix("::/128"), "unspecified address"},
	{mustPrefix("::1/128"), "loopback address"},
	{mustPrefix("::/96"), "IPv4-compatible IPv6 address"},
	{mustPrefix("64:ff9b::/96"), "NAT64 address (embeds an IPv4 address)"},
	{mustPrefix("64:ff9b:1::/48"), "local NAT64 address"},
	{mustPrefix("100::/64"), "discard-only address"},
	{mustPrefix("2001::/32"), "Teredo address (embeds an IPv4 address)"},
	{mustPrefix("2001:db8::/32"), "documentation address"},
	{mustPrefix("2002::/16"), "6to4 address (embeds an IPv4 address)"},
	{mustPrefix("fc00::/7"), "unique-local (private) address"},
	{mustPrefix("fe80::/10"), "link-local address"},
	{mustPrefix("fec0::/10"), "site-local address"},
	{mustPrefix("ff00::/8"), "multicast address"},
}

// BlockedReason says why ip is not a public internet address, or returns
// "" when it is. IPv4-mapped IPv6 addresses are judged as the IPv4 address
// they carry.
func BlockedReason(ip netip.Addr) string {
	if !ip.IsValid() {
		return "invalid address"
	}
	if ip.Zone() != "" {
		return "scoped IPv6 address"
	}
	ip = ip.Unmap()
	for _, r := range blockedRanges {
		if r.prefix.Contains(ip) {
			return r.reason
		}
	}
	if !ip.IsGlobalUnicast() {
		return "non-public address"
	}
	return ""
}

// ParseHostIP interprets a URL host as an IP address the way C resolvers
// do, so that every spelling of an address is judged as that address:
// IPv6 literals, dotted IPv4, and the legacy inet_aton forms with fewer
// than four parts and octal or hex parts ("2130706433", "0177.0.0.1",
// "0x7f.1"). ok is false for an ordinary host name. A host that looks
// numeric but is not a valid address (for example "1.2.3.4.5" or a last
// label of digits) is an error, because resolvers disagree about it.
func ParseHostIP(host string) (ip netip.Addr, ok bool, err error) {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if h == "" {
		return netip.Addr{}, false, errors.New("empty host")
	}
	if strings.Contains(h, ":") {
		a, perr := netip.ParseAddr(h)
		if perr != nil {
			return netip.Addr{}, false, fmt.Errorf("invalid IPv6 address %q", host)
		}
		return a, true, nil
	}
	parts := strings.Split(h, ".")
	if !isNumericLabel(parts[len(parts)-1]) {
		return netip.Addr{}, false, nil // an ordinary name
	}
	if len(parts) > 4 {
		return netip.Addr{}, false, fmt.Errorf("ambiguous numeric host %q", host)
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, perr := parseIPv4Part(p)
		if perr != nil {
			return netip.Addr{}, false, fmt.Errorf("ambiguous numeric host %q", host)
		}
		vals[i] = v
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}, false, fmt.Errorf("ambiguous numeric host %q", host)
		}
		n |= v << (8 * (3 - i))
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}, false, fmt.Errorf("ambiguous numeric host %q", host)
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true, nil
}

// isNumericLabel: decimal digits, or 0x followed by hex digits.
func isNumericLabel(s string) bool {
	if rest, ok := strings.CutPrefix(s, "0x"); ok {
		return strings.Trim(rest, "0123456789abcdef") == ""
	}
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func parseIPv4Part(p string) (uint64, error) {
	switch {
	case p == "":
		return 0, errors.New("empty part")
	case strings.HasPrefix(p, "0x"):
		if p == "0x" {
			return 0, nil
		}
		return strconv.ParseUint(p[2:], 16, 32)
	case len(p) > 1 && p[0] == '0':
		return strconv.ParseUint(p[1:], 8, 32)
	}
	return strconv.ParseUint(p, 10, 32)
}

// SSRFGuard keeps web requests on the public internet: it validates URLs,
// resolves host names itself and dials only the addresses it checked, so
// a DNS answer cannot change between the check and the connection. It is
// safe for concurrent use. Other packages that fetch URLs given by a model
// (or by a chat user) should use it too.
type SSRFGuard struct {
	// Allow lists networks that may be reached although not public (a
	// user's LAN, a local service).
	Allow []netip.Prefix
	// LookupNetIP resolves host names; nil means net.DefaultResolver.
	LookupNetIP func(ctx context.Context, network, host string) ([]netip.Addr, error)
	// Dialer connects to checked addresses; nil means a default dialer.
	Dialer *net.Dialer
}

// NewSSRFGuard returns a guard allowing the given extra networks.
func NewSSRFGuard(allow []netip.Prefix) *SSRFGuard {
	return &SSRFGuard{Allow: append([]netip.Prefix(nil), allow...)}
}

// CheckAddr returns a *BlockedError unless ip is public or allowlisted.
func (g *SSRFGuard) CheckAddr(host string, ip netip.Addr) error {
	u := ip.Unmap()
	for _, p := range g.Allow {
		if p.Contains(u) || p.Contains(ip) {
			return nil
		}
	}
	if reason := BlockedReason(ip); reason != "" {
		return &BlockedError{Host: host, Addr: ip, Reason: reason}
	}
	return nil
}

// CheckURLSyntax checks what can be judged without DNS: the scheme (http or
// https), the presence of a host, and any IP literal in any spelling.
func (g *SSRFGuard) CheckURLSyntax(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("unsupported URL scheme %q: only http and https can be fetched", u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("URL %q has no host", u.Redacted())
	}
	ip, isIP, err := ParseHostIP(host)
	if err != nil {
		return &BlockedError{Host: host, Reason: err.Error()}
	}
	if isIP {
		return g.CheckAddr(host, ip)
	}
	return nil
}

// CheckURL is CheckURLSyntax plus resolving a host name: it fails when no
// resolved address is allowed.
func (g *SSRFGuard) CheckURL(ctx context.Context, u *url.URL) error {
	if err := g.CheckURLSyntax(u); err != nil {
		return err
	}
	_, err := g.allowedAddrs(ctx, u.Hostname())
	return err
}

// allowedAddrs resolves host and keeps the addresses that may be dialled;
// with none left it returns the first refusal.
func (g *SSRFGuard) allowedAddrs(ctx context.Context, host string) ([]netip.Addr, error) {
	ip, isIP, err := ParseHostIP(host)
	if err != nil {
		return nil, &BlockedError{Host: host, Reason: err.Error()}
	}
	if isIP {
		if err := g.CheckAddr(host, ip); err != nil {
			return nil, err
		}
		return []netip.Addr{ip}, nil
	}
	lookup := g.LookupNetIP
	if lookup == nil {
		lookup = net.DefaultResolver.LookupNetIP
	}
	addrs, err := lookup(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	var ok []netip.Addr
	var first error
	for _, a := range addrs {
		if err := g.CheckAddr(host, a); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		ok = append(ok, a)
	}
	if len(ok) == 0 {
		if first == nil {
			first = fmt.Errorf("resolve %s: no addresses", host)
		}
		return nil, first
	}
	return ok, nil
}

// DialContext resolves and checks addr's host and connects to the first
// allowed address that answers. Use it as http.Transport.DialContext.
func (g *SSRFGuard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("invalid port in %q", addr)
	}
	addrs, err := g.allowedAddrs(ctx, host)
	if err != nil {
		return nil, err
	}
	d := g.Dialer
	if d == nil {
		d = &net.Dialer{}
	}
	var last error
	for _, a := range addrs {
		conn, err := d.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		last = err
	}
	return nil, last
}
