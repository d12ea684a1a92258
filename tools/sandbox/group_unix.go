//go:build unix

package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// setGroup makes the child lead a new process group; on Linux the kernel
// also kills it if the gateway dies first.
func setGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setParentDeathSignal(cmd.SysProcAttr)
}

// KillGroup sends SIGKILL to the process group led by cmd's process, which
// also reaches descendants still alive after the leader exited. A group that
// is already gone is not an error.
func KillGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		if perr := cmd.Process.Kill(); perr != nil && !errors.Is(perr, os.ErrProcessDone) {
			return perr
		}
		return nil
	}
	return err
}
