package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// installSocketFilter restricts this thread, and so the command executed
// from it, with the socket filter (see seccomp.go; blockUnix adds its UNIX
// socket half). The thread must have no_new_privs set.
func installSocketFilter(blockUnix bool) error {
	raw, err := socketFilter(runtime.GOARCH, blockUnix)
	if err != nil {
		return err
	}
	filters := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filters[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filters)), Filter: &filters[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return fmt.Errorf("seccomp filter: %w", errno)
	}
	runtime.KeepAlive(filters)
	return nil
}

// socketFilterFile returns a file holding the socket filter as
// bubblewrap's --seccomp reads it (struct sock_filter after struct
// sock_filter, in the machine's byte order), positioned at its start and
// inherited across exec.
func socketFilterFile(blockUnix bool) (*os.File, error) {
	raw, err := socketFilter(runtime.GOARCH, blockUnix)
	if err != nil {
		return nil, err
	}
	fd, err := unix.MemfdCreate("nanobot-seccomp", 0) // no MFD_CLOEXEC: bwrap reads it
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "nanobot-seccomp")
	if _, err := f.Write(encodeFilter(raw)); err != nil {
		f.Close()
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	return f, nil
}

// encodeFilter lays raw out as an array of struct sock_filter.
func encodeFilter(raw []bpf.RawInstruction) []byte {
	b := make([]byte, 0, 8*len(raw))
	for _, r := range raw {
		b = binary.NativeEndian.AppendUint16(b, r.Op)
		b = append(b, r.Jt, r.Jf)
		b = binary.NativeEndian.AppendUint32(b, r.K)
	}
	return b
}
