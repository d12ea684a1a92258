//go:build unix

package shell

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// ptySupported reports whether exec sessions can run here.
const ptySupported = true

// ptyCols and ptyRows are the terminal size a session's program sees: wide,
// so that tools which wrap at the width do not cut lines the model reads.
const (
	ptyCols = 200
	ptyRows = 50
)

// startInPTY starts cmd (built by sandbox.Command, not yet started) with a
// new pseudo-terminal as its stdin, stdout and stderr and controlling
// terminal, and returns the terminal's master side.
//
// sandbox.Command makes the child lead a process group of its own
// (Setpgid). A controlling terminal needs a session instead, and setsid
// fails for a group leader, so the child starts with Setsid alone: a new
// session also leads a new process group whose id is the child's pid, so
// sandbox.KillGroup (kill -pid), which cmd.Cancel calls, still reaches
// every process the command starts in it. Pdeathsig stays.
func startInPTY(cmd *exec.Cmd) (*os.File, error) {
	master, tty, err := pty.Open()
	if err != nil {
		return nil, fmt.Errorf("open a pseudo-terminal: %w", err)
	}
	defer tty.Close() // the child holds its own copies
	if err := pty.Setsize(master, &pty.Winsize{Cols: ptyCols, Rows: ptyRows}); err != nil {
		master.Close()
		return nil, fmt.Errorf("size the pseudo-terminal: %w", err)
	}
	// pty's ioctls went through master.Fd(), which leaves the descriptor in
	// blocking mode, where Close cannot interrupt a Read. A non-blocking
	// duplicate goes through the runtime poller: deadlines work and Close
	// wakes the reader.
	nb, err := nonBlocking(master)
	master.Close()
	if err != nil {
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = false
	cmd.SysProcAttr.Setsid = true
	cmd.SysProcAttr.Setctty = true
	cmd.SysProcAttr.Ctty = 0 // the child's stdin, the terminal
	if err := cmd.Start(); err != nil {
		nb.Close()
		return nil, err
	}
	return nb, nil
}

// nonBlocking returns a pollable duplicate of f.
func nonBlocking(f *os.File) (*os.File, error) {
	var fd int
	var dupErr error
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("pseudo-terminal: %w", err)
	}
	if err := rc.Control(func(old uintptr) {
		fd, dupErr = unix.FcntlInt(old, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, fmt.Errorf("pseudo-terminal: %w", err)
	}
	if dupErr != nil {
		return nil, fmt.Errorf("pseudo-terminal: dup: %w", dupErr)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("pseudo-terminal: non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}
