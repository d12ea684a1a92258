// Package shell is the exec tool: it runs one shell command (bash -c, or
// sh -c where bash is missing) in the workspace through tools/sandbox and
// returns stdout, stderr and the exit code, labelled, with long output cut
// to its head and tail.
//
// Before a command runs, two best-effort guards read it: the deny rules
// refuse commands that destroy the machine (wiping /, formatting disks,
// powering off, fork bombs, ...; user deny patterns add to them and user
// allow patterns override them), and with RestrictToWorkspace every path
// the command names, cd included, must resolve inside the workspace. They
// are guards, not a sandbox: kernel-level confinement belongs to
// tools/sandbox. A timed-out or cancelled command is killed with its whole
// process group. Children get a minimal environment (sandbox.BaseEnv plus
// configured keys), never the gateway's API keys.
//
// A Tool is safe for concurrent use.
package shell

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/internal/option"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/internal/pathguard"
	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// maxCommandBytes is Linux's limit for one argument (MAX_ARG_STRLEN); the
// command is passed to the shell as one.
const maxCommandBytes = 128 << 10

// Defaults for Options.
const (
	DefaultTimeout        = 60 * time.Second
	DefaultMaxTimeout     = 600 * time.Second
	DefaultMaxOutputChars = 5000
)

// Options configures the exec tool. The zero value of every field but
// Workspace means its default.
type Options struct {
	// Workspace is the folder commands run in (required).
	Workspace string
	// RestrictToWorkspace refuses commands that name paths outside the
	// workspace (cd included), sets HOME to the workspace and TMPDIR to
	// Workspace/.tmp.
	RestrictToWorkspace bool
	// DefaultTimeout applies when the call gives none (default 60s).
	DefaultTimeout time.Duration
	// MaxTimeout caps the timeout a call may ask for (default 600s).
	MaxTimeout time.Duration
	// DenyPatterns are extra regular expressions (case-insensitive, over
	// the whole command line) of commands to refuse.
	DenyPatterns []string
	// AllowPatterns are regular expressions that, when they match, let a
	// command through every deny rule (built-in and DenyPatterns). They do
	// not lift the workspace restriction.
	AllowPatterns []string
	// MaxOutputChars is how many characters of the head and of the tail of
	// the output are kept (default 5000 each).
	MaxOutputChars int
	// ExtraEnv passes more environment to commands: "KEY" copies the
	// gateway's value, "KEY=value" sets one.
	ExtraEnv []string
	// Shell is the interpreter run with -c (default: bash if found, else sh).
	Shell string
	// Sandbox is the confinement mode (default auto).
	Sandbox sandbox.Mode
	// ReadOnly and ReadWrite are folders a confined command may use besides
	// the workspace (tools.exec.allowPaths).
	ReadOnly, ReadWrite []string
	// DenyNetwork forbids confined commands TCP connections.
	DenyNetwork bool
	// AllowUnixSockets lets confined commands create UNIX sockets, and so
	// connect to local daemons' sockets (tools.exec.allowUnixSockets).
	AllowUnixSockets bool
	// Limits are a confined command's resource limits.
	Limits sandbox.Limits
	// Approval asks the owner before risky (or all) commands run.
	Approval Approval
	// Logger receives one debug line per command (default slog.Default()).
	Logger *slog.Logger
	// Sessions, when set (and the platform has pseudo-terminals), lets
	// exec start long-running sessions (yield_time_ms). Several exec tools
	// (one per agent) may share one.
	Sessions *Sessions
}

// Tool is the exec tool.
type Tool struct {
	opts  Options
	paths *pathguard.Guard
	guard *guard
	shell string
	log   *slog.Logger
}

var _ tools.Tool = (*Tool)(nil)

// New validates opts (bad patterns, unknown sandbox mode) and returns the
// tool.
func New(opts Options) (*Tool, error) {
	if opts.Workspace == "" {
		return nil, errors.New("shell: workspace is required")
	}
	option.Positive(&opts.DefaultTimeout, DefaultTimeout)
	option.Positive(&opts.MaxTimeout, DefaultMaxTimeout)
	opts.DefaultTimeout = min(opts.DefaultTimeout, opts.MaxTimeout)
	option.Positive(&opts.MaxOutputChars, DefaultMaxOutputChars)
	if _, err := sandbox.ResolveMode(opts.Sandbox); err != nil {
		return nil, fmt.Errorf("shell: %w", err)
	}
	paths, err := pathguard.New(opts.Workspace, opts.RestrictToWorkspace)
	if err != nil {
		return nil, fmt.Errorf("shell: %w", err)
	}
	g, err := newGuard(opts.DenyPatterns, opts.AllowPatterns)
	if err != nil {
		return nil, err
	}
	sh := opts.Shell
	if sh == "" {
		sh = "sh"
		if p, err := exec.LookPath("bash"); err == nil {
			sh = p
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Tool{opts: opts, paths: paths, guard: g, shell: sh, log: log.With("tool", "exec")}, nil
}

func (t *Tool) Name() string { return "exec" }

func (t *Tool) Description() string {
	d := fmt.Sprintf("Run a shell command (%s -c) and return its stdout, stderr and exit code. "+
		"Use it for builds, tests, git, package managers, scripts and searching files (grep, find). "+
		"It runs in the workspace unless working_dir says otherwise, with no input (stdin is empty, so avoid interactive programs), "+
		"and is killed with all its child processes after timeout seconds (default %d, at most %d). "+
		"Output beyond %d characters keeps the first and last %d. "+
		"Destructive system commands (wiping / or home, formatting disks, shutdown, ...) are refused.",
		filepath.Base(t.shell), int(t.opts.DefaultTimeout/time.Second), int(t.opts.MaxTimeout/time.Second),
		2*t.opts.MaxOutputChars, t.opts.MaxOutputChars)
	if t.opts.RestrictToWorkspace {
		d += " Every path the command uses must stay inside the workspace; HOME is the workspace."
	}
	if t.sessions() {
		d += " For long-running or interactive commands (dev servers, watchers, REPLs, prompts), pass yield_time_ms: " +
			"the command then runs in a terminal, and if it is still running after that many milliseconds exec returns a session_id " +
			"to poll or type into with write_stdin; timeout is then the session's lifetime."
	}
	return d
}

// sessions reports whether exec starts sessions.
func (t *Tool) sessions() bool { return t.opts.Sessions != nil && t.opts.Sessions.Supported() }

func (t *Tool) Parameters() map[string]any {
	p := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"command":     map[string]any{"type": "string", "minLength": 1, "description": "The shell command line to run."},
			"working_dir": map[string]any{"type": "string", "description": "Folder to run in, relative to the workspace (default: the workspace)."},
			"timeout":     map[string]any{"type": "integer", "minimum": 1, "description": fmt.Sprintf("Seconds before the command is killed (default %d, capped at %d).", int(t.opts.DefaultTimeout/time.Second), int(t.opts.MaxTimeout/time.Second))},
		},
		"required": []any{"command"},
	}
	if t.sessions() {
		props := p["properties"].(map[string]any)
		props["yield_time_ms"] = map[string]any{"type": "integer", "minimum": 0, "maximum": int(maxYield / time.Millisecond),
			"description": "Start the command as a session in a terminal and wait this many milliseconds for it before answering; " +
				"if it is still running, the answer has a session_id for write_stdin. Omit it for an ordinary one-shot command."}
		props["max_output_chars"] = map[string]any{"type": "integer", "minimum": minPollChars, "maximum": t.opts.Sessions.opts.BufferChars,
			"description": fmt.Sprintf("With yield_time_ms: the most output characters to return (default %d).", min(defaultPollChars, t.opts.Sessions.opts.BufferChars))}
	}
	return p
}

// Execute runs the command. A non-zero exit code is a normal result (the
// model reads it); refusals, timeouts and cancellation are errors.
func (t *Tool) Execute(ctx context.Context, args map[string]any) (tools.Result, error) {
	a := tools.Args(args)
	command := a.String("command")
	if strings.TrimSpace(command) == "" {
		return tools.Result{}, errors.New("command is empty")
	}
	if len(command) > maxCommandBytes {
		return tools.Result{}, fmt.Errorf("command is %d bytes, more than the %d a single command may have; write long scripts to a file with write_file and run the file", len(command), maxCommandBytes)
	}
	dir, err := t.paths.Resolve(a.String("working_dir"))
	if err != nil {
		return tools.Result{}, fmt.Errorf("working_dir: %w", err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return tools.Result{}, fmt.Errorf("working_dir %s is not an existing folder", t.paths.Display(dir))
	}
	cmds := parse(command)
	if why := t.guard.check(command, cmds); why != "" {
		t.log.Info("command refused", "reason", why)
		return tools.Result{}, tools.Refused("command refused by the exec safety guard: %s. Do not retry it in another form; if it is really needed, ask the user to run it themselves", why)
	}
	if t.opts.RestrictToWorkspace {
		if why := confine(t.paths, dir, cmds); why != "" {
			t.log.Info("command refused", "reason", why)
			return tools.Result{}, fmt.Errorf("command refused: %s; restrictToWorkspace is on, so work with paths inside the workspace %s", why, t.paths.Workspace())
		}
	}
	if err := t.approve(ctx, command, cmds, dir); err != nil {
		return tools.Result{}, err
	}
	if t.sessions() && a.Has("yield_time_ms") {
		return t.startSession(ctx, command, dir, a)
	}
	timeout := t.opts.DefaultTimeout
	if s := a.Int("timeout", 0); s > 0 {
		timeout = min(time.Duration(s)*time.Second, t.opts.MaxTimeout)
	}
	return t.run(ctx, command, dir, timeout)
}

func (t *Tool) env() ([]string, error) {
	home := ""
	if t.opts.RestrictToWorkspace {
		home = t.paths.Workspace()
	}
	env := sandbox.BaseEnv(home, t.opts.ExtraEnv...)
	for _, kv := range [][2]string{{"PAGER", "cat"}, {"GIT_PAGER", "cat"}, {"GIT_TERMINAL_PROMPT", "0"}, {"NO_COLOR", "1"}} {
		env = sandbox.SetEnv(env, kv[0], kv[1])
	}
	if os.Getenv("TERM") == "" {
		env = sandbox.SetEnv(env, "TERM", "dumb")
	}
	if t.opts.RestrictToWorkspace {
		tmp := filepath.Join(t.paths.Workspace(), ".tmp")
		if err := os.MkdirAll(tmp, 0o700); err != nil {
			return nil, fmt.Errorf("create %s: %w", tmp, err)
		}
		env = sandbox.SetEnv(env, "TMPDIR", tmp)
	}
	return env, nil
}

func (t *Tool) run(ctx context.Context, command, dir string, timeout time.Duration) (tools.Result, error) {
	env, err := t.env()
	if err != nil {
		return tools.Result{}, err
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	limit := 4 * t.opts.MaxOutputChars // bytes: room for MaxOutputChars of any UTF-8
	stdout, stderr := newCapture(limit), newCapture(limit)
	writable := append([]string{t.paths.Workspace()}, t.opts.ReadWrite...)
	cmd, err := sandbox.Command(runCtx, sandbox.Spec{
		Path:             t.shell,
		Args:             []string{"-c", command},
		Dir:              dir,
		Env:              env,
		Stdout:           stdout,
		Stderr:           stderr,
		Mode:             t.opts.Sandbox,
		Writable:         writable,
		Readable:         t.opts.ReadOnly,
		DenyNetwork:      t.opts.DenyNetwork,
		AllowUnixSockets: t.opts.AllowUnixSockets,
		Limits:           t.opts.Limits,
		WaitDelay:        time.Second,
	})
	if err != nil {
		return tools.Result{}, err
	}
	start := time.Now()
	runErr := cmd.Run()
	elapsed := time.Since(start)
	if errors.Is(runErr, exec.ErrWaitDelay) {
		// The shell exited but something it started still holds our output:
		// an unredirected background job. Don't leave it running.
		_ = sandbox.KillGroup(cmd)
	}
	t.log.Debug("command finished", "duration", elapsed, "error", runErr)
	output := render(stdout, stderr, t.opts.MaxOutputChars)
	switch {
	case ctx.Err() != nil:
		return tools.Result{}, fmt.Errorf("command cancelled after %s; it and its child processes were killed. Output so far:\n%s", elapsed.Round(time.Millisecond), output)
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return tools.Result{}, fmt.Errorf("command timed out after %s; it and its child processes were killed (raise timeout, at most %d seconds, or run less at once). Output so far:\n%s", timeout, int(t.opts.MaxTimeout/time.Second), output)
	}
	var exitErr *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exitErr) && !errors.Is(runErr, exec.ErrWaitDelay) {
		return tools.Result{}, fmt.Errorf("could not run the command: %w", runErr)
	}
	status := "Exit code: 0"
	if ps := cmd.ProcessState; ps != nil {
		if code := ps.ExitCode(); code >= 0 {
			status = fmt.Sprintf("Exit code: %d", code)
		} else {
			status = "Exit: " + ps.String()
		}
	}
	return tools.Result{Content: output + "\n\n" + status}, nil
}
