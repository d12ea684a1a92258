package web

import (
	"context"
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseHostIP(t *testing.T) {
	tests := []struct {
		host    string
		want    string // "" for not an IP
		wantErr bool
	}{
		{host: "127.0.0.1", want: "127.0.0.1"},
		{host: "127.0.0.1.", want: "127.0.0.1"},
		{host: "2130706433", want: "127.0.0.1"},
		{host: "0177.0.0.1", want: "127.0.0.1"},
		{host: "0x7f.1", want: "127.0.0.1"},
		{host: "0x7F000001", want: "127.0.0.1"},
		{host: "0x7f.0.0.0x1", want: "127.0.0.1"},
		{host: "127.1", want: "127.0.0.1"},
		{host: "10.1", want: "10.0.0.1"},
		{host: "0", want: "0.0.0.0"},
		{host: "017700000001", want: "127.0.0.1"},
		{host: "169.254.43518", want: "169.254.169.254"},
		{host: "[::1]", want: "::1"},
		{host: "::ffff:127.0.0.1", want: "::ffff:127.0.0.1"},
		{host: "example.com"},
		{host: "1e100.net"},
		{host: "localhost"},
		{host: "deadbeef"},
		{host: "1.2.3.4.5", wantErr: true},
		{host: "08.1.1.1", wantErr: true},
		{host: "256.1.1.1", wantErr: true},
		{host: "1.2.3.256", wantErr: true},
		{host: "4294967296", wantErr: true},
		{host: "example.123", wantErr: true},
		{host: "0xg.1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			ip, ok, err := ParseHostIP(tt.host)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseHostIP(%q) error = %v, wantErr %v", tt.host, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			got := ""
			if ok {
				got = ip.String()
			}
			if got != tt.want {
				t.Errorf("ParseHostIP(%q) = %q, want %q", tt.host, got, tt.want)
			}
		})
	}
}

func TestBlockedReason(t *testing.T) {
	tests := []struct {
		ip      string
		blocked bool
	}{
		{"127.0.0.1", true}, {"127.255.255.254", true}, {"::1", true},
		{"10.0.0.1", true}, {"172.16.0.1", true}, {"172.31.255.255", true}, {"192.168.1.1", true},
		{"169.254.169.254", true}, {"fe80::1", true}, {"100.64.0.1", true}, {"100.127.255.255", true},
		{"224.0.0.1", true}, {"ff02::1", true}, {"0.0.0.0", true}, {"0.1.2.3", true}, {"::", true},
		{"255.255.255.255", true}, {"240.0.0.1", true}, {"fc00::1", true}, {"fd12:3456::1", true},
		{"::ffff:127.0.0.1", true}, {"::ffff:10.0.0.1", true}, {"::ffff:169.254.169.254", true},
		{"::127.0.0.1", true}, {"64:ff9b::7f00:1", true}, {"64:ff9b::808:808", true},
		{"2002:7f00:1::", true}, {"2001::1", true}, {"2001:db8::1", true}, {"192.0.2.1", true}, {"198.18.0.1", true},
		{"8.8.8.8", false}, {"1.1.1.1", false}, {"93.184.216.34", false}, {"172.32.0.1", false}, {"100.128.0.1", false},
		{"2606:4700:4700::1111", false}, {"2a00:1450:4001::200e", false}, {"::ffff:8.8.8.8", false},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			reason := BlockedReason(netip.MustParseAddr(tt.ip))
			if (reason != "") != tt.blocked {
				t.Errorf("BlockedReason(%s) = %q, want blocked=%v", tt.ip, reason, tt.blocked)
			}
		})
	}
	if BlockedReason(netip.MustParseAddr("fe80::1%eth0")) == "" {
		t.Error("zoned address must be blocked")
	}
}

func TestCheckURLSyntax(t *testing.T) {
	g := NewSSRFGuard(nil)
	refused := []string{
		"http://127.0.0.1/", "http://127.0.0.1:8080/x", "https://[::1]/", "http://10.0.0.1/", "http://192.168.0.10/",
		"http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://2130706433/", "http://0177.0.0.1/",
		"http://0x7f.1/", "http://0x7f000001/", "http://127.1/", "http://0/", "http://[::ffff:127.0.0.1]/",
		"http://[::ffff:a9fe:a9fe]/", "http://[64:ff9b::a9fe:a9fe]/", "http://100.64.0.1/", "http://224.0.0.1/",
		"http://1.2.3.4.5/", "http://example.0x7f/", "ftp://example.com/", "file:///etc/passwd", "gopher://example.com/",
		"javascript:alert(1)", "http:///nohost", "http://[fe80::1%25eth0]/",
	}
	for _, raw := range refused {
		t.Run(raw, func(t *testing.T) {
			u, err := url.Parse(raw)
			if err != nil {
				return // unparsable is refused too
			}
			if err := g.CheckURLSyntax(u); err == nil {
				t.Errorf("CheckURLSyntax(%s) allowed it", raw)
			}
		})
	}
	for _, raw := range []string{"https://example.com/", "http://93.184.216.34/", "https://[2606:4700:4700::1111]/", "https://127.0.0.1.nip.io/"} {
		u, _ := url.Parse(raw)
		if err := g.CheckURLSyntax(u); err != nil {
			t.Errorf("CheckURLSyntax(%s) = %v", raw, err)
		}
	}
	var be *BlockedError
	u, _ := url.Parse("http://0x7f.1/")
	if err := g.CheckURLSyntax(u); !errors.As(err, &be) || be.Addr.String() != "127.0.0.1" || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("error = %v, want a loopback BlockedError for 127.0.0.1", err)
	}
}

func TestAllowlistAndResolution(t *testing.T) {
	lookup := func(_ context.Context, _, host string) ([]netip.Addr, error) {
		switch host {
		case "intranet.test":
			return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil
		case "mixed.test":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("::1")}, nil
		case "loop.test":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, nil
		}
		return nil, errors.New("no such host")
	}
	g := &SSRFGuard{LookupNetIP: lookup}
	ctx := context.Background()
	if _, err := g.allowedAddrs(ctx, "intranet.test"); err == nil {
		t.Error("intranet.test: want refusal")
	}
	if _, err := g.allowedAddrs(ctx, "loop.test"); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("loop.test: error = %v", err)
	}
	got, err := g.allowedAddrs(ctx, "mixed.test")
	if err != nil || !cmp.Equal(got, []netip.Addr{netip.MustParseAddr("93.184.216.34")}, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })) {
		t.Errorf("mixed.test: %v, %v; want only the public address", got, err)
	}
	if _, err := g.DialContext(ctx, "tcp", "intranet.test:80"); err == nil {
		t.Error("DialContext(intranet.test): want refusal")
	}
	g.Allow = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	if _, err := g.allowedAddrs(ctx, "intranet.test"); err != nil {
		t.Errorf("allowlisted intranet.test: %v", err)
	}
	if err := g.CheckAddr("x", netip.MustParseAddr("::ffff:10.9.9.9")); err != nil {
		t.Errorf("mapped allowlisted address: %v", err)
	}
	if err := g.CheckAddr("x", netip.MustParseAddr("192.168.1.1")); err == nil {
		t.Error("192.168.1.1 is not in the allowlist")
	}
}

// FuzzSSRFCheck: the URL check never panics, every spelling of an address
// is judged as that address, and nothing it lets through is a
// non-public IP.
func FuzzSSRFCheck(f *testing.F) {
	for _, s := range []string{
		"http://127.0.0.1/", "http://2130706433/", "http://0177.0.0.1/", "http://0x7f.1/", "http://[::ffff:127.0.0.1]/",
		"http://example.com/", "https://93.184.216.34:443/a?b", "http://[64:ff9b::1]/", "http://1.2.3.4.5/", "http://0/",
		"http://[fe80::1%25eth0]/", "http://08.0.0.1/", "http://0x.0x.0x.0x/", "http://127.000.000.001/",
	} {
		f.Add(s)
	}
	g := NewSSRFGuard(nil)
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		if g.CheckURLSyntax(u) != nil {
			return
		}
		host := u.Hostname()
		ip, isIP, err := ParseHostIP(host)
		if err != nil {
			t.Fatalf("%q passed although its host %q is ambiguous: %v", raw, host, err)
		}
		if isIP && BlockedReason(ip) != "" {
			t.Fatalf("%q passed although %s is %s", raw, ip, BlockedReason(ip))
		}
		if strict, perr := netip.ParseAddr(strings.Trim(host, "[]")); perr == nil && BlockedReason(strict) != "" {
			t.Fatalf("%q passed although %s is blocked", raw, strict)
		}
	})
}
