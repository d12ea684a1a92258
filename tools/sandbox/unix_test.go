//go:build linux

package sandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// unixProbeEnv makes the test binary, started as a confined command, run
// unixProbe instead of the tests: it tries, by raw system call, each way a
// command could get a UNIX socket, and prints one "name: result" line per
// way.
const unixProbeEnv = "NANOBOT_TEST_UNIX_PROBE"

func unixProbe(target string) {
	try := func(name string, f func() error) {
		if err := f(); err != nil {
			fmt.Printf("%s: %v\n", name, err)
			return
		}
		fmt.Printf("%s: ok\n", name)
	}
	try("connect", func() error {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := unix.Connect(fd, &unix.SockaddrUnix{Name: target}); err != nil {
			return err
		}
		buf := make([]byte, 64)
		n, err := unix.Read(fd, buf)
		if err != nil {
			return err
		}
		if !bytes.Contains(buf[:n], []byte("SANDBOX-SECRET")) {
			return fmt.Errorf("read %q", buf[:n])
		}
		return nil
	})
	try("seqpacket", func() error { return closeSocket(unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET, 0)) })
	try("tcp", func() error { return closeSocket(unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)) })
	pair := func(typ int) error {
		fds, err := unix.Socketpair(unix.AF_UNIX, typ, 0)
		if err == nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
		}
		return err
	}
	try("pair-stream", func() error { return pair(unix.SOCK_STREAM | unix.SOCK_CLOEXEC) })
	try("pair-seqpacket", func() error { return pair(unix.SOCK_SEQPACKET) })
	try("pair-dgram", func() error { return pair(unix.SOCK_DGRAM | unix.SOCK_NONBLOCK) })
	try("io_uring", func() error {
		var params [120]byte // struct io_uring_params
		fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)), 0)
		if errno != 0 {
			return errno
		}
		return unix.Close(int(fd))
	})
	if runtime.GOARCH == "amd64" {
		// The same call through the x32 ABI (where the kernel has it).
		try("x32", func() error {
			fd, _, errno := unix.Syscall(0x40000000|unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM, 0)
			if errno != 0 {
				return errno
			}
			return unix.Close(int(fd))
		})
	}
}

func closeSocket(fd int, err error) error {
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// probeResults runs the probe under spec and returns its results by name.
func probeResults(t *testing.T, spec sandbox.Spec, target string) map[string]string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	spec.Path, spec.Stdout, spec.Stderr = self, &out, &out
	spec.Env = append(sandbox.BaseEnv(""), unixProbeEnv+"="+target)
	// The race runtime reserves more address space than the default limit.
	spec.Limits.MemoryMB = -1
	cmd, err := sandbox.Command(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Run(); err != nil {
		t.Fatalf("the probe failed (%v): %s", err, out.String())
	}
	res := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok {
			res[k] = v
		}
	}
	return res
}

// TestUnixSocketFilter: in every confining mode a command cannot create a
// UNIX socket — by socket(), a datagram socket pair, io_uring or the x32
// ABI — so it cannot connect to a daemon's socket outside its folders;
// stream and seqpacket pairs and TCP stay, and AllowUnixSockets lifts the
// filter. Each result is checked against the unconfined control.
func TestUnixSocketFilter(t *testing.T) {
	if !sandbox.UnixSocketFilterSupported() {
		t.Skipf("no UNIX socket filter for %s", runtime.GOARCH)
	}
	dir := realTempDir(t)
	sock := filepath.Join(dir, "daemon.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("SANDBOX-SECRET\n"))
			c.Close()
		}
	}()
	ws := realTempDir(t)
	control := probeResults(t, sandbox.Spec{Mode: sandbox.ModeNone, Dir: ws}, sock)
	for _, k := range []string{"connect", "seqpacket", "tcp", "pair-stream", "pair-seqpacket", "pair-dgram"} {
		if control[k] != "ok" {
			t.Fatalf("unconfined, %s fails (%q): the test proves nothing", k, control[k])
		}
	}
	t.Logf("unconfined: %v", control)
	eacces := unix.EACCES.Error()
	forVariants(t, true, func(t *testing.T, v variant) {
		got := probeResults(t, sandbox.Spec{Mode: v.mode, Dir: ws, Writable: []string{ws}, Readable: []string{dir}}, sock)
		t.Logf("confined: %v", got)
		want := map[string]string{
			"connect": eacces, "seqpacket": eacces, "pair-dgram": eacces,
			"tcp": "ok", "pair-stream": "ok", "pair-seqpacket": "ok",
		}
		if control["io_uring"] == "ok" {
			want["io_uring"] = unix.ENOSYS.Error()
		}
		if control["x32"] == "ok" {
			want["x32"] = eacces
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: got %q, want %q", k, got[k], w)
			}
		}
		allowed := probeResults(t, sandbox.Spec{Mode: v.mode, Dir: ws, Writable: []string{ws}, Readable: []string{dir}, AllowUnixSockets: true}, sock)
		for _, k := range []string{"connect", "seqpacket", "pair-dgram"} {
			if allowed[k] != "ok" {
				t.Errorf("with AllowUnixSockets, %s: got %q, want ok", k, allowed[k])
			}
		}
	})
}
