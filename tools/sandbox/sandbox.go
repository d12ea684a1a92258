// Package sandbox is the one place nanobot starts child processes: the exec
// tool's shell, MCP stdio servers and skill scripts all get their *exec.Cmd
// from Command. Every child leads its own process group, and when its
// context ends the whole group is killed, so a timed-out command cannot
// leave grandchildren behind. The environment is never inherited wholesale:
// a nil Spec.Env means BaseEnv, a short list of harmless variables, so the
// gateway's API keys never reach a child by accident.
//
// Spec.Mode is the seam for confinement. Today only ModeNone exists (ModeAuto
// selects it); Landlock and namespace modes will be added here without
// changing callers, who already pass the folders a child may use
// (Spec.Writable, Spec.Readable). A mode this build cannot provide is an
// error: the child is not started unconfined instead.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"
)

// Mode selects how strictly a child is confined.
type Mode string

const (
	// ModeAuto picks the strongest mode the host supports (today: none).
	ModeAuto Mode = "auto"
	// ModeNone applies no kernel-level confinement: the child runs as the
	// gateway's user, in its own process group, with a filtered
	// environment. Application-level checks (deny lists, workspace paths)
	// are the caller's job.
	ModeNone Mode = "none"
	// ModeLandlock will restrict file access with Landlock (not yet built).
	ModeLandlock Mode = "landlock"
	// ModeBwrap will run the child in bubblewrap namespaces (not yet built).
	ModeBwrap Mode = "bwrap"
)

// ErrUnsupportedMode is wrapped when a requested mode cannot be provided.
var ErrUnsupportedMode = errors.New("sandbox: unsupported mode")

// DefaultWaitDelay is used when Spec.WaitDelay is zero.
const DefaultWaitDelay = 2 * time.Second

// Spec describes one child process.
type Spec struct {
	// Path is the program: an absolute path, or a name looked up in PATH.
	Path string
	// Args are the arguments after the program name.
	Args []string
	// Dir is the working folder ("" = the gateway's).
	Dir string
	// Env is the complete environment; nil means BaseEnv("") (never the
	// gateway's full environment).
	Env []string
	// Stdin, Stdout and Stderr are connected as with exec.Cmd; nil means
	// the null device.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Mode is the confinement; "" means ModeAuto.
	Mode Mode
	// Writable are folders the child may write (workspace, its TMPDIR) and
	// Readable extra folders it may read, for confining modes to enforce.
	Writable, Readable []string
	// WaitDelay bounds how long Wait keeps reading output held open by
	// escaped descendants after the child exited or its context ended
	// (0 = DefaultWaitDelay); see exec.Cmd.WaitDelay.
	WaitDelay time.Duration
}

// Command prepares (does not start) the child. When ctx ends, the child's
// whole process group is killed. Call Start/Run/Wait on the result, and
// KillGroup to remove descendants left behind after a normal exit.
func Command(ctx context.Context, spec Spec) (*exec.Cmd, error) {
	if _, err := ResolveMode(spec.Mode); err != nil {
		return nil, err
	}
	if spec.Path == "" {
		return nil, errors.New("sandbox: empty program path")
	}
	// ModeNone is the only mode: nothing wraps the program yet.
	cmd := exec.CommandContext(ctx, spec.Path, spec.Args...)
	if cmd.Err != nil {
		return nil, fmt.Errorf("sandbox: %w", cmd.Err)
	}
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	if cmd.Env == nil {
		cmd.Env = BaseEnv("")
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Stdin, spec.Stdout, spec.Stderr
	cmd.WaitDelay = spec.WaitDelay
	if cmd.WaitDelay <= 0 {
		cmd.WaitDelay = DefaultWaitDelay
	}
	setGroup(cmd)
	cmd.Cancel = func() error { return KillGroup(cmd) }
	return cmd, nil
}

// ResolveMode maps a requested mode to the one that will be used and fails
// for modes this build cannot enforce.
func ResolveMode(m Mode) (Mode, error) {
	switch m {
	case "", ModeAuto, ModeNone:
		return ModeNone, nil
	case ModeLandlock, ModeBwrap:
		return "", fmt.Errorf("%w %q: not available in this build yet (use %q or %q)", ErrUnsupportedMode, m, ModeAuto, ModeNone)
	}
	return "", fmt.Errorf("%w %q (known: auto, none, landlock, bwrap)", ErrUnsupportedMode, m)
}
