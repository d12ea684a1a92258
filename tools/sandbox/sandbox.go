// Package sandbox is the one place nanobot starts child processes: the exec
// tool's shell, MCP stdio servers and skill scripts all get their *exec.Cmd
// from Command. Every child leads its own process group, and when its
// context ends the whole group is killed, so a timed-out command cannot
// leave grandchildren behind. The environment is never inherited wholesale:
// a nil Spec.Env means BaseEnv, a short list of harmless variables, so the
// gateway's API keys never reach a child by accident.
//
// Spec.Mode picks the confinement. ModeLandlock and ModeBwrap start the
// child through a small helper, the running executable re-executed as
// "sandbox-exec" (see ExecMain): it joins a pids cgroup where it can,
// stays as init of the child's own user, PID and mount namespaces where
// the kernel allows them, restricts itself with Landlock (or builds a
// bubblewrap command line), sets resource limits and then execs the
// program, so the program and all it starts stay confined and end with it. By default a confined child may read the
// system's folders (/usr, /etc without its secrets, ...), read and write
// Spec.Writable and a private TMPDIR, read Spec.Readable, and nothing else:
// not the config folder, the sessions or the rest of $HOME. ModeAuto picks
// the strongest mode the host offers (Detect); a mode that cannot be
// provided is an error, never a silent fall back to running unconfined.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Mode selects how strictly a child is confined.
type Mode string

const (
	// ModeAuto picks the strongest mode the host supports: landlock, else
	// bwrap, else none.
	ModeAuto Mode = "auto"
	// ModeNone applies no kernel-level confinement: the child runs as the
	// gateway's user, in its own process group, with a filtered
	// environment. Application-level checks (deny lists, workspace paths)
	// are the caller's job.
	ModeNone Mode = "none"
	// ModeLandlock restricts file access (and, with NoNetwork, TCP) with
	// Landlock, in a user namespace of its own where available, under
	// resource limits.
	ModeLandlock Mode = "landlock"
	// ModeBwrap runs the child in bubblewrap namespaces that hold only the
	// allowed folders, under resource limits.
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
	// gateway's full environment). Confining modes point TMPDIR at a
	// private folder, and HOME at the first Writable folder when HOME is
	// outside what the child may use.
	Env []string
	// Stdin, Stdout and Stderr are connected as with exec.Cmd; nil means
	// the null device.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Mode is the confinement; "" means ModeAuto.
	Mode Mode
	// Writable are folders the child may write (the workspace) and
	// Readable extra folders or files it may read, for confining modes to
	// enforce.
	Writable, Readable []string
	// NoNetwork cuts a confined child off the network, loopback included.
	NoNetwork bool
	// Limits bound a confined child's resources (zero fields: defaults).
	Limits Limits
	// Helper is the executable run as "<Helper> sandbox-exec ..." for a
	// confining mode ("" = the running executable, which handles it in
	// this package's init).
	Helper string
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
	if mode == ModeNone {
		cmd = exec.CommandContext(ctx, spec.Path, spec.Args...)
		if cmd.Err != nil {
			return nil, fmt.Errorf("sandbox: %w", cmd.Err)
		}
	} else {
		if cmd, env, err = confined(ctx, mode, spec, env); err != nil {
			return nil, err
		}
	}
	cmd.Dir = spec.Dir
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Stdin, spec.Stdout, spec.Stderr
	cmd.WaitDelay = spec.WaitDelay
	if cmd.WaitDelay <= 0 {
		cmd.WaitDelay = DefaultWaitDelay
	}
	setGroup(cmd)
	if mode == ModeLandlock && Detect().UserNS {
		setNamespaces(cmd.SysProcAttr, spec.NoNetwork)
	}
	cmd.Cancel = func() error { return KillGroup(cmd) }
	return cmd, nil
}

// confined builds the helper invocation for mode and the child's
// environment.
func confined(ctx context.Context, mode Mode, spec Spec, env []string) (*exec.Cmd, []string, error) {
	prog, err := exec.LookPath(spec.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: %w", err)
	}
	if abs, err := filepath.Abs(prog); err == nil {
		prog = abs
	}
	sup := Detect()
	if mode == ModeLandlock && spec.NoNetwork && !sup.UserNS && sup.LandlockABI < 4 {
		return nil, nil, fmt.Errorf("%w %q: network off needs Landlock ABI 4 or user namespaces; this host has neither (use bwrap)", ErrUnsupportedMode, mode)
	}
	helper := spec.Helper
	if helper == "" {
		helper = sup.Helper
	}
	writable := cleanPaths(spec.Writable)
	readable := cleanPaths(spec.Readable)
	tmp, err := privateTemp(env, writable)
	if err != nil {
		return nil, nil, err
	}
	env = SetEnv(env, "TMPDIR", tmp)
	if !withinAny(tmp, writable) {
		writable = append(writable, tmp)
	}
	if home := lookupEnv(env, "HOME"); home == "" || !withinAny(filepath.Clean(home), append(writable, readable...)) {
		// The real home is off limits; tools that read ~/.config or
		// write caches get the workspace instead of an error.
		h := tmp
		if len(spec.Writable) > 0 {
			h = writable[0]
		}
		env = SetEnv(env, "HOME", h)
	}

	args := []string{HelperCommand, "--mode=" + string(mode)}
	for _, p := range readable {
		args = append(args, "--ro="+p)
	}
	for _, p := range writable {
		args = append(args, "--rw="+p)
	}
	if spec.NoNetwork {
		args = append(args, "--no-network")
	}
	if mode == ModeLandlock && sup.UserNS {
		args = append(args, "--userns")
	}
	if mode == ModeBwrap {
		args = append(args, "--bwrap="+sup.Bwrap)
	}
	args = append(args, spec.Limits.withDefaults().flags()...)
	args = append(args, "--", prog)
	args = append(args, spec.Args...)
	cmd := exec.CommandContext(ctx, helper, args...)
	if cmd.Err != nil {
		return nil, nil, fmt.Errorf("sandbox: helper: %w", cmd.Err)
	}
	cmd.Path = helper
	return cmd, append(env, helperEnv+"=1"), nil
}

// privateTemp is the child's TMPDIR: the one env names when it lies in a
// writable folder, else .tmp in the first writable folder, else a folder
// of the gateway's user under the system temp folder. The shared /tmp is
// never writable for a confined child.
func privateTemp(env, writable []string) (string, error) {
	if t := lookupEnv(env, "TMPDIR"); t != "" && withinAny(filepath.Clean(t), writable) {
		return filepath.Clean(t), os.MkdirAll(t, 0o700)
	}
	var dir string
	if len(writable) > 0 {
		dir = filepath.Join(writable[0], ".tmp")
	} else {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("nanobot-sandbox-%d", os.Getuid()))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("sandbox: private temp folder: %w", err)
	}
	return dir, nil
}

func lookupEnv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if s, ok := strings.CutPrefix(kv, key+"="); ok {
			v = s
		}
	}
	return v
}

// ResolveMode maps a requested mode to the one that will be used and fails
// for modes this host cannot enforce.
func ResolveMode(m Mode) (Mode, error) {
	switch m {
	case "", ModeAuto:
		return Detect().Best(), nil
	case ModeNone:
		return ModeNone, nil
	case ModeLandlock, ModeBwrap:
		if why := Detect().available(m); why != "" {
			return "", fmt.Errorf("%w %q: %s (use %q or %q)", ErrUnsupportedMode, m, why, ModeAuto, ModeNone)
		}
		return m, nil
	}
	return "", fmt.Errorf("%w %q (known: auto, none, landlock, bwrap)", ErrUnsupportedMode, m)
}
