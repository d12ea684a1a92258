//go:build linux

package sandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nanobot-go/nanobot/tools/sandbox"
	"github.com/nanobot-go/nanobot/tools/sandbox/sandboxtest"
)

// tcpProbeEnv makes the test binary, started as a confined command, run
// tcpProbe on the targets in its arguments instead of the tests.
const tcpProbeEnv = "NANOBOT_TEST_TCP_PROBE"

// httpReply is what the test servers answer: an HTTP response, so curl
// is content, whose body is the marker the tests look for.
const httpReply = "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 15\r\nConnection: close\r\n\r\nSANDBOX-SECRET\n"

// tcpProbe connects to each HOST:PORT target by raw system call — a plain
// TCP connect(2), an MPTCP socket (which Landlock's TCP rules do not see)
// and a TCP Fast Open sendto — and prints "@@ TARGET" and one
// "way: result" line per way; "ok" means it read the reply. Last, under
// "@@ held ruleset", it names a Landlock ruleset descriptor it holds, or
// says none: a command given one could add rules to it.
func tcpProbe(targets []string) {
	for _, target := range targets {
		fmt.Println("@@", target)
		ap, err := netipAddrPort(target)
		if err != nil {
			fmt.Println("bad target:", err)
			continue
		}
		for _, way := range []struct {
			name  string
			proto int
			open  func(fd int, sa unix.Sockaddr) error
		}{
			{"connect", 0, func(fd int, sa unix.Sockaddr) error { return unix.Connect(fd, sa) }},
			{"mptcp", unix.IPPROTO_MPTCP, func(fd int, sa unix.Sockaddr) error { return unix.Connect(fd, sa) }},
			{"fastopen", 0, func(fd int, sa unix.Sockaddr) error {
				return unix.Sendto(fd, []byte("GET / HTTP/1.0\r\n\r\n"), unix.MSG_FASTOPEN, sa)
			}},
		} {
			fmt.Printf("%s: %s\n", way.name, probeOnce(ap.family, ap.sa, way.proto, way.open))
		}
	}
	held := "none"
	for fd := 0; fd < 1024; fd++ {
		// An unknown rule type is EINVAL on a ruleset and EBADFD on any
		// other descriptor, and changes nothing.
		_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(fd), 99, uintptr(unsafe.Pointer(nil)), 0, 0, 0)
		if errno == unix.EINVAL {
			held = strconv.Itoa(fd)
		}
	}
	fmt.Println("@@ held ruleset")
	fmt.Println(held)
}

type addrPort struct {
	family int
	sa     unix.Sockaddr
}

func netipAddrPort(target string) (addrPort, error) {
	host, portText, err := net.SplitHostPort(target)
	if err != nil {
		return addrPort{}, err
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return addrPort{}, err
	}
	ip := net.ParseIP(host)
	if ip4 := ip.To4(); ip4 != nil {
		sa := &unix.SockaddrInet4{Port: port}
		copy(sa.Addr[:], ip4)
		return addrPort{unix.AF_INET, sa}, nil
	}
	sa := &unix.SockaddrInet6{Port: port}
	copy(sa.Addr[:], ip.To16())
	return addrPort{unix.AF_INET6, sa}, nil
}

// probeOnce opens a stream socket of proto, points it at sa with open and
// reads the reply: "ok" when it is the test servers', else the error.
func probeOnce(family int, sa unix.Sockaddr, proto int, open func(int, unix.Sockaddr) error) string {
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return "socket: " + err.Error()
	}
	defer unix.Close(fd)
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 10})
	if err := open(fd, sa); err != nil {
		return err.Error()
	}
	var got []byte
	buf := make([]byte, 512)
	for {
		n, err := unix.Read(fd, buf)
		if n <= 0 || err != nil {
			break
		}
		got = append(got, buf[:n]...)
	}
	if bytes.Contains(got, []byte("SANDBOX-SECRET")) {
		return "ok"
	}
	return fmt.Sprintf("read %q", got)
}

// runTCPProbe runs tcpProbe under spec on targets and returns its output.
func runTCPProbe(t *testing.T, self string, spec sandbox.Spec, targets []string) string {
	t.Helper()
	var out bytes.Buffer
	spec.Path, spec.Args, spec.Stdout, spec.Stderr = self, targets, &out, &out
	spec.Env = append(sandbox.BaseEnv(""), tcpProbeEnv+"=1")
	// The race runtime reserves more address space than the default limit.
	spec.Limits.MemoryMB = -1
	cmd, err := sandbox.Command(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Run(); err != nil {
		t.Fatalf("the probe failed (%v): %s", err, out.String())
	}
	return out.String()
}

// sections splits output at its "@@ NAME" lines into what follows each.
func sections(out string) map[string]string {
	res := map[string]string{}
	name := ""
	for _, line := range strings.SplitAfter(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "@@ "); ok {
			name = strings.TrimSpace(rest)
			res[name] = ""
			continue
		}
		res[name] += line
	}
	return res
}

// TestNoNetworkOtherWays: with the network off a confined command gets no
// further by raw connect(2), by an MPTCP socket — which Landlock's TCP
// rules do not see, so without a network namespace only the socket filter
// stops it — or by TCP Fast Open, each checked against the unconfined
// control.
func TestNoNetworkOtherWays(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	target := net.JoinHostPort("127.0.0.1", strconv.Itoa(sandboxtest.ForeignServer(t, httpReply)))
	ways := []string{"connect", "mptcp", "fastopen"}
	control := probeWays(runTCPProbe(t, self, sandbox.Spec{Mode: sandbox.ModeNone}, []string{target}), target)
	for _, w := range ways {
		if control[w] != "ok" {
			if w == "mptcp" {
				t.Logf("this kernel has no MPTCP (%s): the MPTCP case proves nothing here", control[w])
				continue
			}
			t.Fatalf("unconfined, %s fails (%q): the test proves nothing", w, control[w])
		}
	}
	forVariants(t, true, func(t *testing.T, v variant) {
		if v.noNS && sandbox.LandlockABI() < 4 {
			t.Skipf("network off needs Landlock ABI 4 or namespaces; ABI %d", sandbox.LandlockABI())
		}
		ws := realTempDir(t)
		// With UNIX sockets allowed the filter is there for MPTCP alone.
		for _, unixSockets := range []bool{false, true} {
			spec := sandbox.Spec{Mode: v.mode, Dir: ws, Writable: []string{ws}, DenyNetwork: true, AllowUnixSockets: unixSockets}
			got := probeWays(runTCPProbe(t, self, spec, []string{target}), target)
			for _, w := range ways {
				if got[w] == "" || got[w] == "ok" {
					t.Errorf("allowUnixSockets %v: %s with the network off: got %q, want a failure", unixSockets, w, got[w])
				}
			}
			if !v.namespaced() && got["mptcp"] != "socket: protocol not supported" {
				t.Errorf("allowUnixSockets %v: mptcp without a network namespace: got %q, want the socket refused", unixSockets, got["mptcp"])
			}
		}
	})
}

// probeWays reads tcpProbe's "way: result" lines for target.
func probeWays(out, target string) map[string]string {
	res := map[string]string{}
	for _, line := range strings.Split(sections(out)[target], "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok {
			res[k] = v
		}
	}
	return res
}
