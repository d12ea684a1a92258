//go:build linux

package shell

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/tools/sandbox"
	"github.com/nanobot-go/nanobot/tools/sandbox/sandboxtest"
)

// unixProbe is a Python one-liner: connect to the UNIX socket argv[1]
// ("@name" for an abstract one) and print what the server sends; with
// argv[2] "dgram", send the secret as a datagram from an unnamed socket
// pair instead (a datagram socket can be aimed at any address after the
// fact, so socketpair is a way to reach a daemon too).
const unixProbe = `import socket, sys
a = sys.argv[1]
if a[0] == "@": a = "\0" + a[1:]
if len(sys.argv) > 2:
    s, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.sendto(b"BATTERY-SECRET", a)
    print("sent")
else:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(a)
    print(s.recv(64).decode())
`

// systemPython finds a python3 among the system folders every sandbox
// mode lets commands read (a pyenv shim under /root would not run
// confined), or skips.
func systemPython(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("needs python3 in /usr/bin or /usr/local/bin for the UNIX socket probes")
	return ""
}

// unixStreamServer listens on addr (a path, or "@name" for an abstract
// socket) and writes the secret to every connection.
func unixStreamServer(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(addr, "@") {
		// Anyone may connect (as to a system daemon's socket): only the
		// sandbox stands in the way.
		if err := os.Chmod(addr, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("BATTERY-SECRET\n"))
			c.Close()
		}
	}()
}

// unixDgramServer listens for datagrams on path (like /dev/log) and
// returns a channel that gets each one received.
func unixDgramServer(t *testing.T, path string) <-chan string {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	got := make(chan string, 16)
	go func() {
		buf := make([]byte, 256)
		for {
			n, _, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			got <- string(buf[:n])
		}
	}()
	return got
}

// TestBatteryUnixSockets: a confined command cannot reach a daemon's UNIX
// socket outside the workspace — pathname (as under /run or /tmp) or
// abstract, stream or datagram — with the network on or off. Each case
// first gets through unconfined (the control).
func TestBatteryUnixSockets(t *testing.T) {
	py := systemPython(t)
	in := newInstance(t)
	m := sandboxtest.Marker()
	stream := filepath.Join(in.outside, "daemon.sock")
	unixStreamServer(t, stream)
	abstract := "@nanobot-battery-" + m
	unixStreamServer(t, abstract)
	dgram := filepath.Join(in.outside, "log.sock")
	received := unixDgramServer(t, dgram)
	probe := func(args ...string) string {
		return py + " -c '" + unixProbe + "' " + strings.Join(args, " ")
	}
	printed := func(out string, err error) bool { return err == nil && strings.Contains(out, "BATTERY-SECRET") }
	// A datagram got through when the server received it; "sent" comes
	// after the send, so once it is printed a datagram that got through
	// is already queued at the server.
	delivered := func(out string, err error) bool {
		if err != nil || !strings.Contains(out, "sent") {
			return false
		}
		select {
		case <-received:
			return true
		case <-time.After(5 * time.Second):
			return false
		}
	}
	cases := []struct {
		name, command string
		escaped       func(string, error) bool
	}{
		{"connect to a pathname socket outside the workspace", probe(stream), printed},
		{"connect to an abstract socket", probe(abstract), printed},
		{"send a datagram from a socket pair to a socket outside", probe(dgram, "dgram"), delivered},
	}
	forModes(t, func(t *testing.T, mode sandbox.Mode) {
		for _, network := range []bool{true, false} {
			name := "network on"
			if !network {
				name = "network off"
				if mode == sandbox.ModeLandlock && !sandbox.Namespaces() && sandbox.LandlockABI() < 4 {
					t.Logf("skipping network off: needs Landlock ABI 4 or user namespaces")
					continue
				}
			}
			opt := func(o *Options) { o.DenyNetwork = !network }
			t.Run(name, func(t *testing.T) {
				for _, c := range cases {
					t.Run(c.name, func(t *testing.T) {
						out, err := run(t, in.tool(t, sandbox.ModeNone, opt), map[string]any{"command": c.command})
						if !c.escaped(out, err) {
							t.Fatalf("unconfined, the case does not even work (%v): %s", err, out)
						}
						out, err = run(t, in.tool(t, mode, opt), map[string]any{"command": c.command})
						if c.escaped(out, err) {
							t.Fatalf("under the %s sandbox the command reached the socket (%v): %s", mode, err, out)
						}
						t.Logf("confined: %s", lastLine(out))
					})
				}
			})
		}
		// What stays: a socket pair (an unnamed stream connection between
		// the command's own processes).
		pair := py + ` -c 'import socket; a, b = socket.socketpair(); a.send(b"pair-ok"); print(b.recv(16).decode())'`
		if out, err := run(t, in.tool(t, mode, nil), map[string]any{"command": pair}); err != nil || !strings.Contains(out, "pair-ok") {
			t.Errorf("a stream socket pair fails under the %s sandbox (%v): %s", mode, err, out)
		}
		// Granting the socket's folder is not enough...
		folder := in.tool(t, mode, func(o *Options) { o.ReadOnly = []string{in.outside} })
		if out, err := run(t, folder, map[string]any{"command": probe(stream)}); printed(out, err) {
			t.Errorf("with the folder in allowPaths the %s sandbox let the command reach the socket: %s", mode, out)
		}
		// ...allowUnixSockets (with the folder, which bwrap needs to
		// show the socket at all) lets a user who needs a daemon reach it.
		allow := in.tool(t, mode, func(o *Options) { o.AllowUnixSockets, o.ReadOnly = true, []string{in.outside} })
		if out, err := run(t, allow, map[string]any{"command": probe(stream)}); !printed(out, err) {
			t.Errorf("with allowUnixSockets the %s sandbox still blocks the socket (%v): %s", mode, err, out)
		}
	})
}

// lastLine is the last non-empty line of s before the exit code.
func lastLine(s string) string {
	s, _, _ = strings.Cut(s, "\n\nExit code")
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
