// Package sandbox is the one place nanobot starts child processes: the exec
// tool's shell, MCP stdio servers and skill scripts all get their *exec.Cmd
// from Command. Every child leads its own process group, and when its
// context ends the whole group is killed, so a timed-out command cannot
// leave grandchildren behind. The environment is never inherited wholesale:
// a nil Spec.Env means BaseEnv, a short list of harmless variables, so the
// gateway's API keys never reach a child by accident.
//
// Spec.Mode selects confinement. ModeLandlock (what ModeAuto picks on a
// Linux kernel with Landlock) re-executes the gateway's own executable as a
// small helper (argv[0] HelperName, see Init) that sets resource limits,
// joins a pids cgroup where one can be made, restricts itself with Landlock
// — system folders read-only, Spec.Readable read-only, Spec.Writable
// read-write, nothing else of the file system (not the config folder, not
// the sessions, not the rest of $HOME, not /tmp, not /proc), optionally no
// TCP — and then executes the command, which inherits all of it. A mode
// this build or host cannot provide is an error: the child is not started
// unconfined instead.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// Mode selects how strictly a child is confined.
type Mode string

const (
	// ModeAuto picks the strongest mode the host supports: landlock where
	// the kernel has it and the executable can act as the helper (Init was
	// called), else none.
	ModeAuto Mode = "auto"
	// ModeNone applies no kernel-level confinement: the child runs as the
	// gateway's user, in its own process group, with a filtered
	// environment. Application-level checks (deny lists, workspace paths)
	// are the caller's job.
	ModeNone Mode = "none"
	// ModeLandlock confines the child with Landlock, resource limits and a
	// pids cgroup (see the package doc).
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
	// DenyNetwork forbids TCP connect and bind (Landlock ABI 4 or newer).
	DenyNetwork bool
	// Limits are the confined child's resource limits.
	Limits Limits
	// WaitDelay bounds how long Wait keeps reading output held open by
	// escaped descendants after the child exited or its context ended
	// (0 = DefaultWaitDelay); see exec.Cmd.WaitDelay.
	WaitDelay time.Duration
}

// Command prepares (does not start) the child. When ctx ends, the child's
// whole process group is killed. Call Start/Run/Wait on the result, and
// KillGroup to remove descendants left behind after a normal exit.
func Command(ctx context.Context, spec Spec) (*exec.Cmd, error) {
	mode, err := ResolveMode(spec.Mode)
	if err != nil {
		return nil, err
	}
	if spec.Path == "" {
		return nil, errors.New("sandbox: empty program path")
	}
	env := spec.Env
	if env == nil {
		env = BaseEnv("")
	}
	var cmd *exec.Cmd
	switch mode {
	case ModeLandlock:
		prog, err := exec.LookPath(spec.Path)
		if err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("sandbox: the helper executable: %w", err)
		}
		p := policyFor(spec, prog)
		p.Cgroup = newPidsCgroup(p.Limits.Processes)
		cmd = exec.CommandContext(ctx, self, append([]string{p.encode(), "--", prog}, spec.Args...)...)
		cmd.Args[0] = HelperName
		env = privateTmp(env, spec.Writable)
	default:
		cmd = exec.CommandContext(ctx, spec.Path, spec.Args...)
	}
	if cmd.Err != nil {
		return nil, fmt.Errorf("sandbox: %w", cmd.Err)
	}
	cmd.Dir = spec.Dir
	cmd.Env = env
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
// for modes this build or host cannot enforce.
func ResolveMode(m Mode) (Mode, error) {
	switch m {
	case "", ModeAuto:
		if LandlockABI() >= 1 && helperReady.Load() {
			return ModeLandlock, nil
		}
		return ModeNone, nil
	case ModeNone:
		return ModeNone, nil
	case ModeLandlock:
		if LandlockABI() < 1 {
			return "", fmt.Errorf("%w %q: this kernel has no Landlock (Linux 5.13+ with landlock in the lsm= list)", ErrUnsupportedMode, m)
		}
		if !helperReady.Load() {
			return "", fmt.Errorf("%w %q: this executable cannot act as the sandbox helper (its main does not call sandbox.Init)", ErrUnsupportedMode, m)
		}
		return ModeLandlock, nil
	case ModeBwrap:
		return "", fmt.Errorf("%w %q: not available in this build yet (use %q or %q)", ErrUnsupportedMode, m, ModeAuto, ModeLandlock)
	}
	return "", fmt.Errorf("%w %q (known: auto, none, landlock, bwrap)", ErrUnsupportedMode, m)
}

// Describe says in a few words how children are confined under m, for
// status displays and logs.
func Describe(m Mode) string {
	got, err := ResolveMode(m)
	switch {
	case err != nil:
		return "unavailable: " + err.Error()
	case got == ModeLandlock:
		return fmt.Sprintf("landlock (ABI %d)", LandlockABI())
	}
	return "none (process group and filtered environment only)"
}
