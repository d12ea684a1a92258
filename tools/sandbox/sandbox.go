// Package sandbox is the one place nanobot starts child processes: the exec
// tool's shell, MCP stdio servers and skill scripts all get their *exec.Cmd
// from Command. Every child leads its own process group, and when its
// context ends the whole group is killed, so a timed-out command cannot
// leave grandchildren behind. The environment is never inherited wholesale:
// a nil Spec.Env means BaseEnv, a short list of harmless variables, so the
// gateway's API keys never reach a child by accident.
//
// Spec.Mode selects confinement. Both confining modes re-execute the
// gateway's own executable as a small helper (argv[0] HelperName, see
// Init) that joins a pids cgroup of its own where one can be made, sets
// resource limits and then executes the command, which inherits all of
// it:
//
//   - ModeLandlock (what ModeAuto picks on a Linux kernel with Landlock)
//     restricts the helper with Landlock — system folders read-only,
//     Spec.Readable read-only, Spec.Writable read-write, nothing else of
//     the file system (not the config folder, not the sessions, not the
//     rest of $HOME, not /tmp), optionally no TCP — and drops every
//     capability. Where user namespaces work (Namespaces; probed once) the
//     helper starts in new user, PID and mount namespaces (and a network
//     namespace with the network off), mounts a /proc that shows only the
//     sandbox's processes, and stays as the namespace's init while a second
//     stage of itself confines and executes the command.
//   - ModeBwrap (what ModeAuto picks without Landlock when bubblewrap works)
//     executes bubblewrap, which builds a mount namespace holding only the
//     system folders and the allowed ones, with PID, IPC, UTS (and with the
//     network off, network) namespaces and no capabilities.
//
// In both modes a seccomp filter (seccomp.go) keeps the child from
// creating UNIX sockets, so it cannot reach a daemon's socket outside its
// folders, unless Spec.AllowUnixSockets; the filter exists for amd64 and
// arm64, and elsewhere the confining modes need AllowUnixSockets.
//
// With the network on, a confined child cannot connect to the TCP ports
// this process listens on, the gateway's own (the port wall, portwall.go:
// a Landlock ruleset built once and shared; PortWall says where the host
// cannot). Command may be called from many goroutines at once.
//
// A mode this build or host cannot provide is an error: the child is not
// started unconfined instead.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"
)

// noNamespaces turns the namespaces of the landlock mode off (tests of the
// path without them).
var noNamespaces atomic.Bool

// helperExecutable is the program started as the helper: the running one
// (benchmarks point it at a built nanobot).
var helperExecutable = os.Executable

// Mode selects how strictly a child is confined.
type Mode string

const (
	// ModeAuto picks the strongest mode the host supports: landlock where
	// the kernel has it, else bwrap where bubblewrap works, else none. Both
	// need an executable that can act as the helper (Init was called).
	ModeAuto Mode = "auto"
	// ModeNone applies no kernel-level confinement: the child runs as the
	// gateway's user, in its own process group, with a filtered
	// environment. Application-level checks (deny lists, workspace paths)
	// are the caller's job.
	ModeNone Mode = "none"
	// ModeLandlock confines the child with Landlock, namespaces where
	// they work, no capabilities, resource limits and a pids cgroup (see
	// the package doc).
	ModeLandlock Mode = "landlock"
	// ModeBwrap runs the child in bubblewrap namespaces that hold only the
	// allowed folders, under resource limits and a pids cgroup.
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
	// DenyNetwork cuts a confined child off the network: a network
	// namespace of its own (bwrap; landlock where namespaces work) and/or
	// no TCP connect and bind (Landlock ABI 4 or newer).
	DenyNetwork bool
	// AllowUnixSockets lets a confined child create UNIX sockets of its
	// own (socket(AF_UNIX, ...)), and so connect to any pathname socket it
	// can name, such as a daemon's under /run. By default it may not (a
	// seccomp filter; see the package doc); stream socket pairs stay.
	AllowUnixSockets bool
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
	case ModeLandlock, ModeBwrap:
		if cmd, err = helperCommand(ctx, mode, spec); err != nil {
			return nil, err
		}
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

// helperCommand starts the helper that confines spec's program under mode
// (landlock or bwrap): the policy travels as its first argument, and in
// landlock mode the helper is put in new namespaces where they work.
func helperCommand(ctx context.Context, mode Mode, spec Spec) (*exec.Cmd, error) {
	prog, err := exec.LookPath(spec.Path)
	if err == nil {
		prog, err = filepath.Abs(prog)
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	self, err := helperExecutable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: the helper executable: %w", err)
	}
	if !spec.AllowUnixSockets && !UnixSocketFilterSupported() {
		return nil, errNoUnixFilter()
	}
	p := policyFor(spec, prog)
	p.Mode = mode
	if mode == ModeBwrap {
		if p.Bwrap, err = Bwrap(); err != nil {
			return nil, fmt.Errorf("%w %q: bubblewrap %v", ErrUnsupportedMode, mode, err)
		}
	} else {
		p.Namespaces = Namespaces()
		if !p.Network && !p.Namespaces && LandlockABI() < 4 {
			return nil, fmt.Errorf("%w %q: network off needs Landlock ABI 4 (Linux 6.7) or user namespaces; this host has ABI %d and no user namespaces (use bwrap)", ErrUnsupportedMode, mode, LandlockABI())
		}
	}
	wallFile, err := portWallFile(p)
	if err != nil {
		return nil, err
	}
	if wallFile != nil {
		p.WallFD = 3 // ExtraFiles[0]
	}
	p.Cgroup = newPidsCgroup(p.Limits.Processes)
	cmd := exec.CommandContext(ctx, self, append([]string{p.encode(), "--", prog}, spec.Args...)...)
	cmd.Args[0] = HelperName
	if wallFile != nil {
		// Closed when cmd is garbage collected (os.NewFile's cleanup):
		// exec.Cmd has no hook after Start, and the caller may start cmd
		// any time later.
		cmd.ExtraFiles = []*os.File{wallFile}
	}
	if p.Namespaces {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
		setNamespaces(cmd.SysProcAttr, spec.DenyNetwork)
	}
	return cmd, nil
}

// ResolveMode maps a requested mode to the one that will be used and fails
// for modes this build or host cannot enforce.
func ResolveMode(m Mode) (Mode, error) {
	switch m {
	case "", ModeAuto:
		switch {
		case !helperReady.Load():
			return ModeNone, nil
		case LandlockABI() >= 1:
			return ModeLandlock, nil
		}
		if _, err := Bwrap(); err == nil {
			return ModeBwrap, nil
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
		if _, err := Bwrap(); err != nil {
			return "", fmt.Errorf("%w %q: bubblewrap %v", ErrUnsupportedMode, m, err)
		}
		if !helperReady.Load() {
			return "", fmt.Errorf("%w %q: this executable cannot act as the sandbox helper (its main does not call sandbox.Init)", ErrUnsupportedMode, m)
		}
		return ModeBwrap, nil
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
	case got == ModeLandlock && Namespaces():
		return fmt.Sprintf("landlock (ABI %d) with user, PID and mount namespaces", LandlockABI())
	case got == ModeLandlock:
		return fmt.Sprintf("landlock (ABI %d; no user namespaces here)", LandlockABI())
	case got == ModeBwrap:
		bw, _ := Bwrap()
		return "bwrap (" + bw + ")"
	}
	return "none (process group and filtered environment only)"
}
