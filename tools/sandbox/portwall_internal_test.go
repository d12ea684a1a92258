//go:build linux

package sandbox

import (
	"context"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOwnListeningPorts: the ports of this process's listeners (IPv4,
// IPv6, wildcard, MPTCP) are found; a closed listener's port is not, even
// while a connection it accepted is open on it, and neither is a client's
// port. What is found agrees with the other way to tell: the listening
// sockets of /proc/net/tcp and tcp6 whose inodes this process holds.
func TestOwnListeningPorts(t *testing.T) {
	var want []uint16
	listen := func(lc net.ListenConfig, addr string) {
		ln, err := lc.Listen(context.Background(), "tcp", addr)
		if err != nil {
			t.Logf("listen %s: %v (not tried)", addr, err)
			return
		}
		t.Cleanup(func() { ln.Close() })
		want = append(want, uint16(ln.Addr().(*net.TCPAddr).Port))
	}
	var mptcp net.ListenConfig
	mptcp.SetMultipathTCP(true) // plain TCP where the kernel has no MPTCP
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0", "0.0.0.0:0"} {
		listen(net.ListenConfig{}, addr)
	}
	listen(mptcp, "127.0.0.1:0")
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	client, err := net.Dial("tcp", closed.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	accepted, err := closed.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer accepted.Close()
	closed.Close()
	notWant := []uint16{uint16(closed.Addr().(*net.TCPAddr).Port), uint16(client.LocalAddr().(*net.TCPAddr).Port)}

	got, err := ownListeningPorts()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range want {
		if !slices.Contains(got, p) {
			t.Errorf("listening port %d not found in %v", p, got)
		}
	}
	for _, p := range notWant {
		if slices.Contains(got, p) {
			t.Errorf("port %d (closed listener, or a client's) found in %v", p, got)
		}
	}
	if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Errorf("ports %v are not sorted and unique", got)
	}
	if oracle := listeningPortsFromProcNet(t); !slices.Equal(got, oracle) {
		t.Errorf("found %v; /proc/net/tcp{,6} with this process's socket inodes say %v", got, oracle)
	}
}

// listeningPortsFromProcNet finds this process's listening ports the
// other way: the listening sockets (state 0A) of /proc/net/tcp and tcp6
// whose inode is the target "socket:[INODE]" of one of /proc/self/fd.
func listeningPortsFromProcNet(t *testing.T) []uint16 {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, e := range entries {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if inode, ok := strings.CutPrefix(target, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	var ports []uint16
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		// sl local_address rem_address st ... uid timeout inode
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			port, err := strconv.ParseUint(hexPort, 16, 16)
			if err != nil {
				t.Fatalf("%s: %q: %v", name, line, err)
			}
			ports = append(ports, uint16(port))
		}
	}
	slices.Sort(ports)
	return slices.Compact(ports)
}

// BenchmarkPortWall measures the wall's parts: what every confined command
// pays in the gateway (discover: find this process's listening ports;
// cached: a descriptor of the cached ruleset) and the one-time build of a
// ruleset of 65,535 rules. What the helper pays to enforce it shows in
// BenchmarkSandboxStartPortWall against BenchmarkSandboxStart.
func BenchmarkPortWall(b *testing.B) {
	if LandlockABI() < 4 {
		b.Skipf("Landlock ABI %d has no TCP rules", LandlockABI())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	b.Run("discover", func(b *testing.B) {
		for b.Loop() {
			if ports, err := ownListeningPorts(); err != nil || len(ports) == 0 {
				b.Fatalf("ports %v, %v", ports, err)
			}
		}
	})
	ports, err := ownListeningPorts()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("cached", func(b *testing.B) {
		w := portWall{fd: -1}
		if f, err := w.ruleset(ports); err != nil { // the one build, untimed
			b.Fatal(err)
		} else {
			f.Close()
		}
		for b.Loop() {
			f, err := w.ruleset(ports)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		if n := w.builds.Load(); n != 1 {
			b.Errorf("built %d times, want once", n)
		}
	})
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			fd, err := buildPortWall(ports)
			if err != nil {
				b.Fatal(err)
			}
			unix.Close(fd)
		}
	})
}
