//go:build !unix

package sandbox

import (
	"errors"
	"os"
	"os/exec"
)

// setGroup has no portable equivalent here.
func setGroup(*exec.Cmd) {}

// KillGroup kills cmd's process; without process groups on this platform,
// descendants may survive.
func KillGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}
