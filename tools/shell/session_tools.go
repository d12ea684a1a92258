package shell

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// Limits of the session tools' arguments (nanobot's).
const (
	defaultYield          = time.Second
	maxYield              = 30 * time.Second
	defaultWaitFor        = 10 * time.Second
	maxWaitFor            = 120 * time.Second
	defaultPollChars      = 10_000
	minPollChars          = 1000
	maxStdinBytes         = 64 << 10
	terminateWait         = 5 * time.Second
	sessionCommandPreview = 120
)

// eofChar is what close_stdin types: Ctrl-D, end-of-file for a program
// reading the terminal line by line.
const eofChar = "\x04"

// SessionTools returns write_stdin and list_exec_sessions over m. What
// write_stdin types goes through ap like an exec command (a session is
// often a shell), the workspace being the one the command paths are read
// against.
func SessionTools(m *Sessions, ap Approval, workspace string) []tools.Tool {
	return []tools.Tool{&WriteStdin{m: m, approval: ap, workspace: workspace}, &ListSessions{m: m}}
}

// ownerOf is the conversation a call comes from: a session belongs to it.
func ownerOf(ctx context.Context) string {
	cc, _ := tools.CallContextFrom(ctx)
	return cc.SessionKey
}

// durationArg reads a millisecond argument, defaulted and clamped.
func durationArg(a tools.Args, key string, def, maxD time.Duration) time.Duration {
	if !a.Has(key) {
		return def
	}
	return min(max(time.Duration(a.Int(key, 0))*time.Millisecond, 0), maxD)
}

// pollChars is the output budget of one answer.
func (m *Sessions) pollChars(a tools.Args) int {
	n := a.Int("max_output_chars", defaultPollChars)
	return min(max(n, minPollChars), m.opts.BufferChars)
}

// report waits on s, takes its output and words the answer; notes come
// before the status line. A session seen ending is forgotten. It returns
// an error (carrying the output) when the gateway killed the command.
func (m *Sessions) report(ctx context.Context, s *session, wait time.Duration, waitFor string, maxChars int, notes ...string) (tools.Result, error) {
	s.touch(m.opts.Now())
	p := s.poll(ctx, wait, waitFor)
	now := m.opts.Now()
	s.touch(now)
	out := clip(m.opts.Redact.Secrets(p.output), maxChars)
	var b strings.Builder
	if strings.TrimSpace(out) == "" {
		b.WriteString("(no new output)")
	} else {
		b.WriteString(strings.TrimRight(out, "\n"))
	}
	b.WriteString("\n")
	if waitFor != "" && !strings.Contains(p.output, waitFor) {
		fmt.Fprintf(&b, "\nWait target not observed: %q", waitFor)
	}
	for _, n := range notes {
		b.WriteString("\n" + n)
	}
	if p.endReason != "" {
		b.WriteString("\nSession " + p.endReason + ".")
	}
	if p.done {
		b.WriteString("\n" + p.exit)
		m.forget(s, "")
	} else {
		b.WriteString("\nProcess running. session_id: " + s.id)
	}
	fmt.Fprintf(&b, "\nElapsed: %.1fs", now.Sub(s.started).Seconds())
	text := strings.TrimLeft(b.String(), "\n")
	if p.endReason != "" {
		return tools.Result{}, errors.New(text)
	}
	return tools.Result{Content: text}, nil
}

// WriteStdin is the write_stdin tool: type into a session, poll its
// output, wait for a text, send end-of-file or terminate it.
type WriteStdin struct {
	m         *Sessions
	approval  Approval
	workspace string
}

var _ tools.Tool = (*WriteStdin)(nil)

func (*WriteStdin) Name() string { return "write_stdin" }

func (w *WriteStdin) Description() string {
	return "Use a running exec session (started by exec with yield_time_ms): type chars into its terminal, " +
		"or pass no chars to just read the output it printed since the last look. " +
		"chars are typed as is: end a line with \\n to press Enter; \\u0003 is Ctrl-C. " +
		"close_stdin=true sends end-of-file (Ctrl-D); terminate=true kills it with all its child processes. " +
		"wait_for returns as soon as that text appears (dev servers, prompts, test watchers), waiting at most wait_timeout_ms. " +
		fmt.Sprintf("A session nobody writes to or polls for %s is killed. ", w.m.opts.IdleTimeout) +
		"Do not start new commands here; start them with exec."
}

func (w *WriteStdin) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"session_id":       map[string]any{"type": "string", "minLength": 1, "description": "The session_id exec returned (list_exec_sessions shows them)."},
			"chars":            map[string]any{"type": "string", "description": "Text to type into the terminal; omit or pass \"\" to only read new output."},
			"close_stdin":      map[string]any{"type": "boolean", "description": "Send end-of-file (Ctrl-D) after chars, for programs that read until EOF."},
			"terminate":        map[string]any{"type": "boolean", "description": "Kill the session's command and all its child processes."},
			"yield_time_ms":    map[string]any{"type": "integer", "minimum": 0, "maximum": int(maxYield / time.Millisecond), "description": "Milliseconds to wait for more output before answering (default 1000; it answers earlier if the command exits)."},
			"wait_for":         map[string]any{"type": "string", "description": "Answer as soon as this text appears in the output."},
			"wait_timeout_ms":  map[string]any{"type": "integer", "minimum": 0, "maximum": int(maxWaitFor / time.Millisecond), "description": "How long to wait for wait_for, in milliseconds (default 10000)."},
			"max_output_chars": map[string]any{"type": "integer", "minimum": minPollChars, "maximum": w.m.opts.BufferChars, "description": fmt.Sprintf("Most output characters to return; beyond it the first and last halves are kept (default %d).", min(defaultPollChars, w.m.opts.BufferChars))},
		},
		"required": []any{"session_id"},
	}
}

func (w *WriteStdin) Execute(ctx context.Context, args map[string]any) (tools.Result, error) {
	a := tools.Args(args)
	id := a.String("session_id")
	s, err := w.m.get(id, ownerOf(ctx))
	if err != nil {
		return tools.Result{}, fmt.Errorf("%w (list_exec_sessions shows this conversation's sessions; start a new one with exec)", err)
	}
	s.calls.Lock()
	defer s.calls.Unlock()
	chars := a.String("chars")
	if len(chars) > maxStdinBytes {
		return tools.Result{}, fmt.Errorf("chars is %d bytes, more than the %d one call may type; write the data to a file and have the program read it", len(chars), maxStdinBytes)
	}
	var notes []string
	if chars != "" {
		if err := w.typeInto(ctx, s, chars); err != nil {
			return tools.Result{}, err
		}
	}
	if a.Bool("close_stdin", false) {
		n, err := s.write(eofChar)
		if n > 0 {
			s.pending, _ = s.pending.typeKeys(eofChar)
		}
		if err != nil {
			return tools.Result{}, err
		}
		notes = append(notes, "Stdin closed (end-of-file sent).")
	}
	wait := durationArg(a, "yield_time_ms", defaultYield, maxYield)
	waitFor := a.String("wait_for")
	if waitFor != "" {
		wait = durationArg(a, "wait_timeout_ms", defaultWaitFor, maxWaitFor)
	}
	if a.Bool("terminate", false) {
		s.kill("")
		notes = append(notes, "Session terminated.")
		wait, waitFor = max(wait, terminateWait), ""
	}
	return w.m.report(ctx, s, wait, waitFor, w.m.pollChars(a), notes...)
}

// typeInto types chars into s once the approval gate lets it: what is
// classified is what the shell will have assembled, the text typed before
// and not run yet included (typing.go). The caller holds s.calls.
func (w *WriteStdin) typeInto(ctx context.Context, s *session, chars string) error {
	if w.approval.off() {
		_, err := s.write(chars)
		return err
	}
	next, keys := s.pending.typeKeys(chars)
	if len(next.text) > maxTyped {
		return fmt.Errorf("not typed: the command being typed into this session would pass %d KiB before it runs "+
			"(an unfinished line, quote or here-document); end it with Enter or drop it with Ctrl-C (\\u0003) first", maxTyped>>10)
	}
	if keys.run != "" {
		reasons := typedRisks(keys.run, s.dir, w.workspace)
		if keys.unsure {
			reasons = append(reasons, riskKeys)
		}
		if err := w.approval.check(ctx, w.m.log, "write_stdin", shown(keys.run), reasons); err != nil {
			return err
		}
	}
	n, err := s.write(chars)
	switch {
	case n == len(chars):
		next.unread = false
		s.pending = next
	case n > 0: // the terminal took a part: the line is what that part made
		s.pending, _ = s.pending.typeKeys(chars[:n])
		s.pending.unread = true
	}
	return err
}

// ListSessions is the list_exec_sessions tool.
type ListSessions struct{ m *Sessions }

var _ tools.Tool = (*ListSessions)(nil)

func (*ListSessions) Name() string { return "list_exec_sessions" }

func (*ListSessions) Description() string {
	return "List this conversation's exec sessions (commands started by exec with yield_time_ms): session_id, " +
		"whether it still runs, elapsed, idle and remaining time, folder and command. " +
		"Use it to find a session_id again before polling, writing to or terminating a session with write_stdin."
}

func (*ListSessions) Parameters() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{}}
}

func (l *ListSessions) Execute(ctx context.Context, _ map[string]any) (tools.Result, error) {
	infos := l.m.list(ownerOf(ctx))
	if len(infos) == 0 {
		return tools.Result{Content: "No exec sessions."}, nil
	}
	lines := make([]string, 0, len(infos))
	for _, in := range infos {
		status := "exited (poll it for its output and exit code)"
		if in.Running {
			status = "running"
		}
		cmd := strings.Join(strings.Fields(in.Command), " ")
		if r := []rune(cmd); len(r) > sessionCommandPreview {
			cmd = string(r[:sessionCommandPreview-1]) + "…"
		}
		lines = append(lines, fmt.Sprintf("%s | %s | elapsed=%s | idle=%s | remaining=%s | cwd=%s | %s",
			in.ID, status, in.Elapsed.Round(time.Second), in.Idle.Round(time.Second), in.Remaining.Round(time.Second), in.Dir, cmd))
	}
	return tools.Result{Content: strings.Join(lines, "\n")}, nil
}

// startSession runs command in a new session of the caller's
// conversation, through the same sandbox as a one-shot command, and
// reports its first yield_time_ms.
func (t *Tool) startSession(ctx context.Context, command, dir string, a tools.Args) (tools.Result, error) {
	env, err := t.env()
	if err != nil {
		return tools.Result{}, err
	}
	// Programs that see a terminal print colours and redraw lines; a dumb
	// one keeps most of them to plain text (the rest is stripped).
	env = sandbox.SetEnv(env, "TERM", "dumb")
	var lifetime time.Duration
	if s := a.Int("timeout", 0); s > 0 {
		lifetime = time.Duration(s) * time.Second
	}
	m := t.opts.Sessions
	s, err := m.start(sessionStart{owner: ownerOf(ctx), command: command, dir: dir, lifetime: lifetime,
		build: func(ctx context.Context) (*exec.Cmd, error) {
			return sandbox.Command(ctx, sandbox.Spec{
				Path: t.shell, Args: []string{"-c", command}, Dir: dir, Env: env,
				Mode:     t.opts.Sandbox,
				Writable: append([]string{t.paths.Workspace()}, t.opts.ReadWrite...), Readable: t.opts.ReadOnly,
				DenyNetwork: t.opts.DenyNetwork, AllowUnixSockets: t.opts.AllowUnixSockets, Limits: t.opts.Limits,
			})
		}})
	switch {
	case errors.Is(err, ErrTooManySessions):
		return tools.Result{}, fmt.Errorf("%w; end one you no longer need with write_stdin terminate=true (list_exec_sessions shows yours), or run the command without yield_time_ms", err)
	case err != nil:
		return tools.Result{}, err
	}
	t.log.Debug("exec session started", "session_id", s.id)
	s.calls.Lock()
	defer s.calls.Unlock()
	return m.report(ctx, s, durationArg(a, "yield_time_ms", defaultYield, maxYield), "", m.pollChars(a))
}
