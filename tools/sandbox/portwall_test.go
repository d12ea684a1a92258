//go:build linux

package sandbox_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nanobot-go/nanobot/tools/sandbox"
	"github.com/nanobot-go/nanobot/tools/sandbox/sandboxtest"
)

// wallTarget is one place a confined command tries to connect to.
type wallTarget struct {
	name, host string
	port       int
	// own: a listener of the process that starts the command, which the
	// wall must refuse; else another process's, which stays reachable.
	own bool
}

func (w wallTarget) addr() string { return net.JoinHostPort(w.host, strconv.Itoa(w.port)) }

// wallTargets listens in this process on 127.0.0.1, [::1] and 0.0.0.0
// (reached by loopback and by a non-loopback address of the host), and
// starts a server in another process on 127.0.0.1, the control.
func wallTargets(t *testing.T) []wallTarget {
	t.Helper()
	listen := func(network, addr string) int {
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Fatalf("listen %s: %v", addr, err)
		}
		t.Cleanup(func() { ln.Close() })
		go sandboxtest.Serve(ln, httpReply)
		return ln.Addr().(*net.TCPAddr).Port
	}
	targets := []wallTarget{{name: "own 127.0.0.1", host: "127.0.0.1", port: listen("tcp", "127.0.0.1:0"), own: true}}
	if ln, err := net.Listen("tcp", "[::1]:0"); err != nil {
		t.Logf("no IPv6 loopback here (%v): [::1] not tried", err)
	} else {
		ln.Close()
		targets = append(targets, wallTarget{name: "own [::1]", host: "::1", port: listen("tcp", "[::1]:0"), own: true})
	}
	any := listen("tcp4", "0.0.0.0:0")
	targets = append(targets, wallTarget{name: "own 0.0.0.0 by loopback", host: "127.0.0.1", port: any, own: true})
	if host := hostAddress(t); host != "" {
		targets = append(targets, wallTarget{name: "own 0.0.0.0 by " + host, host: host, port: any, own: true})
	} else {
		t.Log("no non-loopback IPv4 address on this host: the 0.0.0.0 listener is tried by loopback only")
	}
	return append(targets, wallTarget{name: "another process's 127.0.0.1", host: "127.0.0.1", port: sandboxtest.ForeignServer(t, httpReply)})
}

// hostAddress is an IPv4 address of this host other than loopback, or "".
func hostAddress(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Logf("interface addresses: %v", err)
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

// wallClient is one program a command might connect with.
type wallClient struct {
	name string
	// prog is looked up in PATH ("" = the test binary as tcpProbe).
	prog string
	// line is the shell command that connects to host:port and prints
	// the reply or the error.
	line func(host string, port int) string
	// unixSockets runs it with Spec.AllowUnixSockets, where the socket
	// filter is there for the wall alone.
	unixSockets bool
}

var wallClients = []wallClient{
	{name: "curl", prog: "curl", line: func(h string, p int) string {
		return fmt.Sprintf("curl -sS -v --max-time 10 'http://%s/'", net.JoinHostPort(h, strconv.Itoa(p)))
	}},
	{name: "bash /dev/tcp", prog: "bash", line: func(h string, p int) string {
		return fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/%s/%d && cat <&3'", h, p)
	}},
	{name: "python3", prog: "python3", line: func(h string, p int) string {
		return fmt.Sprintf(`python3 -c '
import socket, sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
    print(s.makefile().read())
except OSError as e:
    print("error:", e)
' %s %d`, h, p)
	}},
	{name: "perl", prog: "perl", line: func(h string, p int) string {
		return fmt.Sprintf(`perl -MIO::Socket::IP -e '$s = IO::Socket::IP->new(PeerHost => $ARGV[0], PeerPort => $ARGV[1], Timeout => 10) or die "error: $!\n"; print <$s>' %s %d`, h, p)
	}},
}

// TestPortWall: with the network on, a confined command cannot connect to
// a TCP port the process that started it listens on — on 127.0.0.1,
// [::1], or a 0.0.0.0 listener by loopback or by the host's own address —
// with curl, bash, python3, perl, or raw connect(2), MPTCP and TCP Fast
// Open of its own; each attempt must be refused with "Permission denied"
// (EACCES), MPTCP sockets cannot be made. In the same command another
// process's listener stays reachable, and unconfined (the control) every
// listener is.
func TestPortWall(t *testing.T) {
	targets := wallTargets(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	clients := []wallClient{{name: "raw connect"}, {name: "raw connect, UNIX sockets allowed", unixSockets: true}}
	for _, c := range wallClients {
		path, err := exec.LookPath(c.prog)
		if err == nil && c.prog == "python3" && !strings.HasPrefix(path, "/usr/") {
			// A pyenv shim is a script that needs $HOME; take the system's.
			path, err = exec.LookPath("/usr/bin/python3")
		}
		if err != nil {
			if c.prog == "perl" || c.prog == "curl" {
				t.Logf("%s is not installed: not tried", c.prog)
				continue
			}
			t.Fatalf("%s is needed: %v", c.prog, err)
		}
		c.prog = path
		clients = append(clients, c)
	}
	forVariants(t, false, func(t *testing.T, v variant) {
		walled := v.mode != sandbox.ModeNone
		if walled {
			if ok, why := sandbox.PortWall(v.mode); !ok {
				if os.Getenv("CI") != "" && v.mode == sandbox.ModeLandlock {
					t.Fatalf("no port wall under %s in CI: %s", v.mode, why)
				}
				t.Skipf("no port wall here: %s", why)
			}
		}
		ws := realTempDir(t)
		for _, c := range clients {
			t.Run(c.name, func(t *testing.T) {
				spec := sandbox.Spec{Mode: v.mode, Dir: ws, Writable: []string{ws}, AllowUnixSockets: c.unixSockets}
				var out string
				if c.line == nil {
					var addrs []string
					for _, tg := range targets {
						addrs = append(addrs, tg.addr())
					}
					out = runTCPProbe(t, self, spec, addrs)
				} else {
					var script strings.Builder
					for _, tg := range targets {
						fmt.Fprintf(&script, "echo '@@ %s'; %s 2>&1\n", tg.addr(), c.line(tg.host, tg.port))
					}
					// The programs by absolute path: PATH may not lead to
					// the same ones (pyenv) inside the sandbox.
					spec.Env = sandbox.SetEnv(sandbox.BaseEnv(""), "PATH", pathFor(clients))
					out, _ = run(t, spec, script.String())
				}
				results := sections(out)
				for _, tg := range targets {
					got, seen := results[tg.addr()]
					if !seen {
						t.Errorf("%s (%s): no result in\n%s", tg.name, tg.addr(), out)
						continue
					}
					connected := strings.Contains(got, "SANDBOX-SECRET") || c.line == nil && strings.Contains(got, "connect: ok")
					switch {
					case !walled || !tg.own:
						if !connected {
							t.Errorf("%s (%s): want connected, got\n%s", tg.name, tg.addr(), got)
						}
					case connected:
						t.Errorf("%s (%s): connected through the wall:\n%s", tg.name, tg.addr(), got)
					case c.line == nil:
						for _, want := range []string{"connect: permission denied", "fastopen: permission denied", "mptcp: socket: protocol not supported"} {
							if !strings.Contains(got, want) {
								t.Errorf("%s (%s): want %q, got\n%s", tg.name, tg.addr(), want, got)
							}
						}
					case !strings.Contains(got, "Permission denied"):
						t.Errorf("%s (%s): want a refusal (Permission denied), got\n%s", tg.name, tg.addr(), got)
					}
				}
				if held := strings.TrimSpace(results["held ruleset"]); c.line == nil && held != "none" {
					t.Errorf("the command holds a Landlock ruleset at descriptor %q", held)
				}
			})
		}
	})
}

// pathFor is a PATH that finds the clients' programs first.
func pathFor(clients []wallClient) string {
	var dirs []string
	for _, c := range clients {
		if c.prog != "" {
			dirs = append(dirs, c.prog[:strings.LastIndexByte(c.prog, '/')])
		}
	}
	return strings.Join(append(dirs, "/usr/local/bin", "/usr/bin", "/bin"), ":")
}

// TestPortWallBuiltOnce: the wall's ruleset is built on the first command
// that needs it and reused while the process's listening ports stay the
// same; a new listener makes one new build, shared by commands that start
// at the same time, and reused in turn.
func TestPortWallBuiltOnce(t *testing.T) {
	mode := sandbox.ModeLandlock
	sandboxtest.Require(t, mode)
	if ok, why := sandbox.PortWall(mode); !ok {
		t.Skipf("no port wall here: %s", why)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash for /dev/tcp")
	}
	sandbox.NoNamespaces.Store(true) // the cheaper way; the wall is the same
	defer sandbox.NoNamespaces.Store(false)
	listen := func() int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go sandboxtest.Serve(ln, httpReply)
		return ln.Addr().(*net.TCPAddr).Port
	}
	ws := realTempDir(t)
	// refused runs a command against the ports and reports whether the
	// wall refused each, which also proves the command got a wall. It may
	// run on any goroutine.
	refused := func(ports ...int) error {
		var script strings.Builder
		for _, p := range ports {
			fmt.Fprintf(&script, "bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && cat <&3' 2>&1; ", p)
		}
		var out strings.Builder
		cmd, err := sandbox.Command(context.Background(), sandbox.Spec{Path: "sh", Args: []string{"-c", script.String()}, Mode: mode, Dir: ws, Writable: []string{ws}, Stdout: &out, Stderr: &out})
		if err != nil {
			return err
		}
		_ = cmd.Run()
		if n := strings.Count(out.String(), "Permission denied"); n < len(ports) || strings.Contains(out.String(), "SANDBOX-SECRET") {
			return fmt.Errorf("ports %v not all refused: %s", ports, out.String())
		}
		return nil
	}
	first := listen()
	before := sandbox.PortWallBuilds()
	for range 3 {
		if err := refused(first); err != nil {
			t.Fatal(err)
		}
	}
	if got := sandbox.PortWallBuilds() - before; got != 1 {
		t.Errorf("three commands with the same listeners built the ruleset %d times, want once", got)
	}
	second := listen()
	before = sandbox.PortWallBuilds()
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = refused(first, second) })
	}
	wg.Wait()
	if err := refused(first, second); err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := sandbox.PortWallBuilds() - before; got != 1 {
		t.Errorf("after a new listener, five commands (four at once) built the ruleset %d times, want once", got)
	}
}

// TestPortWallSays: PortWall names its reason either way, and says no for
// the unconfined mode.
func TestPortWallSays(t *testing.T) {
	if ok, why := sandbox.PortWall(sandbox.ModeNone); ok || why == "" {
		t.Errorf("PortWall(none) = %v, %q; want false and a reason", ok, why)
	}
	ok, why := sandbox.PortWall(sandbox.ModeLandlock)
	if why == "" {
		t.Error("PortWall(landlock) gives no reason")
	}
	if wantOK := sandbox.LandlockABI() >= 4 && sandbox.UnixSocketFilterSupported(); ok != wantOK {
		t.Errorf("PortWall(landlock) = %v (%s) with Landlock ABI %d; want %v", ok, why, sandbox.LandlockABI(), wantOK)
	}
}

// BenchmarkSandboxStartPortWall is BenchmarkSandboxStart while the test
// process listens on a TCP port, so each command gets the port wall; the
// difference between the two is what the wall adds to every command (the
// ruleset is built before the timer starts).
func BenchmarkSandboxStartPortWall(b *testing.B) {
	if exe := os.Getenv("NANOBOT_BENCH_HELPER"); exe != "" {
		defer sandbox.SetHelper(exe)()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	for _, v := range variants[1:] {
		b.Run(v.name, func(b *testing.B) {
			sandboxtest.Require(b, v.mode)
			if ok, why := sandbox.PortWall(v.mode); !ok {
				b.Skip(why)
			}
			if v.noNS {
				sandbox.NoNamespaces.Store(true)
				defer sandbox.NoNamespaces.Store(false)
			}
			ws := b.TempDir()
			start := func() {
				cmd, err := sandbox.Command(context.Background(), sandbox.Spec{Path: "true", Mode: v.mode, Dir: ws, Writable: []string{ws}})
				if err != nil {
					b.Fatal(err)
				}
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
			start()
			builds := sandbox.PortWallBuilds()
			for b.Loop() {
				start()
			}
			if got := sandbox.PortWallBuilds() - builds; got != 0 {
				b.Errorf("the ruleset was built %d more times", got)
			}
		})
	}
}
