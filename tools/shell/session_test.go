package shell

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/approval"
	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// sessionRig is an exec tool with sessions, registered with the session
// tools, and closed when the test ends.
type sessionRig struct {
	m   *Sessions
	reg *tools.Registry
	ws  string

	mu    sync.Mutex
	early map[string]string // output start's exec call returned, per session
}

func newSessionRig(t *testing.T, opts Options, sopts SessionOptions) *sessionRig {
	t.Helper()
	if !ptySupported {
		t.Skip("no pseudo-terminals on this platform")
	}
	if sopts.Logger == nil {
		sopts.Logger = slog.New(slog.DiscardHandler)
	}
	m := NewSessions(sopts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	opts.Sessions = m
	tool, ws := newTool(t, opts)
	reg := tools.NewRegistry()
	for _, tl := range append([]tools.Tool{tool}, SessionTools(m, opts.Approval, ws)...) {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	return &sessionRig{m: m, reg: reg, ws: ws}
}

// lookup is the session id, whoever owns it (nil when forgotten).
func (m *Sessions) lookup(id string) *session {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byID[id]
}

// in is a context of the conversation key.
func in(key string) context.Context {
	return tools.WithCallContext(context.Background(), tools.CallContext{SessionKey: key})
}

func (r *sessionRig) call(t *testing.T, ctx context.Context, name string, args map[string]any) (string, error) {
	t.Helper()
	res, err := r.reg.Execute(ctx, name, args)
	if err != nil {
		return err.Error(), err
	}
	return res.Content, nil
}

func (r *sessionRig) mustCall(t *testing.T, ctx context.Context, name string, args map[string]any) string {
	t.Helper()
	out, err := r.call(t, ctx, name, args)
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return out
}

// waitFor types chars into session id and waits for text to appear.
//
// The output the session's exec call already returned (a loaded machine
// may run the command's first lines before exec answers) comes first: a
// text found there is not waited for again.
func (r *sessionRig) waitFor(t *testing.T, ctx context.Context, id, chars, text string) string {
	t.Helper()
	r.mu.Lock()
	early := r.early[id]
	delete(r.early, id)
	r.mu.Unlock()
	if chars == "" && strings.Contains(early, text) {
		return early
	}
	out := r.mustCall(t, ctx, "write_stdin", map[string]any{"session_id": id, "chars": chars, "wait_for": text})
	if strings.Contains(out, "Wait target not observed") {
		t.Fatalf("typing %q, %q never appeared:\n%s%s", chars, text, early, out)
	}
	return early + out
}

var sessionIDRe = regexp.MustCompile(`session_id: ([0-9a-f]+)`)

// start runs command as a session of ctx's conversation and returns its id.
func (r *sessionRig) start(t *testing.T, ctx context.Context, command string) string {
	t.Helper()
	out := r.mustCall(t, ctx, "exec", map[string]any{"command": command, "yield_time_ms": 0})
	m := sessionIDRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("exec %q: no session_id in\n%s", command, out)
	}
	if before, _, ok := strings.Cut(out, "Process running."); ok {
		if early := strings.TrimSpace(before); early != "" && early != "(no new output)" {
			r.mu.Lock()
			if r.early == nil {
				r.early = map[string]string{}
			}
			r.early[m[1]] = strings.TrimRight(before, "\n") + "\n"
			r.mu.Unlock()
		}
	}
	return m[1]
}

func TestSessionEchoAndEOF(t *testing.T) {
	r := newSessionRig(t, Options{}, SessionOptions{})
	ctx := in("chat:1")
	id := r.start(t, ctx, "cat")
	out := r.waitFor(t, ctx, id, "hello there\n", "hello there\nhello there")
	if !strings.HasPrefix(out, "hello there\nhello there\n") || !strings.Contains(out, "Process running. session_id: "+id) {
		t.Errorf("after typing a line, cat's answer:\n%s\nwant the terminal's echo, cat's copy and the session still running", out)
	}
	out = r.mustCall(t, ctx, "write_stdin", map[string]any{"session_id": id, "close_stdin": true, "yield_time_ms": 10000})
	if !strings.Contains(out, "Stdin closed") || !strings.Contains(out, "Exit code: 0") {
		t.Errorf("after end-of-file:\n%s\nwant cat to exit 0", out)
	}
	// Seen ending, the session is gone.
	if out, err := r.call(t, ctx, "write_stdin", map[string]any{"session_id": id}); !errors.Is(err, ErrSessionNotFound) {
		t.Errorf("poll after the end: %s, want not found", out)
	}
}

func TestSessionPollReturnsOnlyNewOutput(t *testing.T) {
	r := newSessionRig(t, Options{}, SessionOptions{})
	ctx := in("chat:1")
	id := r.start(t, ctx, "echo first; read x; echo second; read y; echo third")
	out := r.waitFor(t, ctx, id, "", "first")
	if !strings.HasPrefix(out, "first\n") {
		t.Errorf("first poll:\n%s\nwant it to start with the first line", out)
	}
	out = r.waitFor(t, ctx, id, "\n", "second")
	if strings.Contains(out, "first") || !strings.Contains(out, "second") {
		t.Errorf("second poll:\n%s\nwant only what came after the first", out)
	}
	out = r.mustCall(t, ctx, "write_stdin", map[string]any{"session_id": id, "chars": "\n", "yield_time_ms": 10000})
	if strings.Contains(out, "second") || !strings.Contains(out, "third") || !strings.Contains(out, "Exit code: 0") {
		t.Errorf("last poll:\n%s\nwant the third line and the exit code", out)
	}
}

func TestSessionOutputOverTime(t *testing.T) {
	r := newSessionRig(t, Options{}, SessionOptions{})
	ctx := in("chat:1")
	id := r.start(t, ctx, "i=0; while [ $i -lt 400 ]; do echo tick$i; i=$((i+1)); sleep 0.01; done")
	out := r.waitFor(t, ctx, id, "", "tick3\n")
	if !strings.HasPrefix(out, "tick0\n") {
		t.Errorf("first poll:\n%s", out)
	}
	out = r.waitFor(t, ctx, id, "", "tick9\n")
	if strings.Contains(out, "tick0\n") || !strings.Contains(out, "tick9\n") {
		t.Errorf("second poll:\n%s\nwant new ticks only", out)
	}
	out = r.mustCall(t, ctx, "write_stdin", map[string]any{"session_id": id, "terminate": true})
	if !strings.Contains(out, "Session terminated.") || !strings.Contains(out, "Exit: signal: killed") && !strings.Contains(out, "Exit code: 137") {
		t.Errorf("terminate:\n%s\nwant the session killed", out)
	}
}

func TestSessionFinishingWithinTheYieldIsAnOrdinaryResult(t *testing.T) {
	r := newSessionRig(t, Options{}, SessionOptions{})
	ctx := in("chat:1")
	out := r.mustCall(t, ctx, "exec", map[string]any{"command": "printf '\\033[1;31mred\\033[0m\\r\\n'; exit 3", "yield_time_ms": 10000})
	want := "red\n\nExit code: 3"
	if !strings.HasPrefix(out, want) || strings.Contains(out, "session_id") {
		t.Errorf("got:\n%q\nwant it to start with %q (escape sequences stripped) and no session", out, want)
	}
	if got := r.mustCall(t, ctx, "list_exec_sessions", nil); got != "No exec sessions." {
		t.Errorf("list after a finished command: %q", got)
	}
}

func TestSessionBelongsToItsConversation(t *testing.T) {
	r := newSessionRig(t, Options{}, SessionOptions{})
	mine, theirs := in("telegram:1"), in("slack:2")
	id := r.start(t, mine, "cat")
	if out, err := r.call(t, theirs, "write_stdin", map[string]any{"session_id": id, "chars": "x\n"}); !errors.Is(err, ErrSessionNotFound) {
		t.Errorf("another conversation writing: %s, want not found", out)
	}
	if out, err := r.call(t, theirs, "write_stdin", map[string]any{"session_id": id, "terminate": true}); !errors.Is(err, ErrSessionNotFound) {
		t.Errorf("another conversation terminating: %s, want not found", out)
	}
	if out := r.mustCall(t, theirs, "list_exec_sessions", nil); out != "No exec sessions." {
		t.Errorf("another conversation's list: %q", out)
	}
	out := r.mustCall(t, mine, "list_exec_sessions", nil)
	if !strings.HasPrefix(out, id+" | running |") || !strings.HasSuffix(out, "| cat") {
		t.Errorf("owner's list: %q", out)
	}
	// Still alive and untouched by the other conversation's attempts.
	out = r.waitFor(t, mine, id, "ok\n", "ok\nok")
	if strings.Contains(out, "x") {
		t.Errorf("the other conversation's input reached the session:\n%s", out)
	}
}

func TestSessionLimit(t *testing.T) {
	r := newSessionRig(t, Options{}, SessionOptions{MaxSessions: 2})
	ctx := in("chat:1")
	r.start(t, ctx, "cat")
	id := r.start(t, ctx, "cat")
	out, err := r.call(t, ctx, "exec", map[string]any{"command": "cat", "yield_time_ms": 0})
	if !errors.Is(err, ErrTooManySessions) || !strings.Contains(out, "terminate=true") {
		t.Fatalf("third session: %s, want too many with advice", out)
	}
	r.mustCall(t, ctx, "write_stdin", map[string]any{"session_id": id, "terminate": true})
	r.start(t, ctx, "cat") // room again
}

func TestSessionGuardsApply(t *testing.T) {
	r := newSessionRig(t, Options{RestrictToWorkspace: true}, SessionOptions{})
	ctx := in("chat:1")
	for _, cmd := range []string{"rm -rf /", "cat /etc/shadow", "cd / && bash"} {
		if out, err := r.call(t, ctx, "exec", map[string]any{"command": cmd, "yield_time_ms": 0}); err == nil || !strings.Contains(out, "refused") {
			t.Errorf("%q: %s, want refused", cmd, out)
		}
	}
	if out := r.mustCall(t, ctx, "list_exec_sessions", nil); out != "No exec sessions." {
		t.Errorf("a refused command left a session: %q", out)
	}
}

func TestSessionOutputIsBounded(t *testing.T) {
	r := newSessionRig(t, Options{}, SessionOptions{BufferChars: 4000})
	ctx := in("chat:1")
	// The run waits for a line, so all of it comes in the poll that types
	// one (after the terminal's echo of it), however late exec answered.
	id := r.start(t, ctx, "read go; seq 1 200000; echo end-of-run; read x")
	out := r.mustCall(t, ctx, "write_stdin", map[string]any{"session_id": id, "chars": "go\n", "wait_for": "end-of-run", "wait_timeout_ms": 60000, "max_output_chars": 1000})
	body, _, ok := strings.Cut(out, "\n\nProcess running")
	if !ok || strings.Contains(out, "Wait target not observed") {
		t.Fatalf("the end of the run never came:\n%s", out)
	}
	body = strings.TrimPrefix(body, "go\n")
	if !strings.HasPrefix(body, "1\n2\n3\n") || !strings.HasSuffix(body, "200000\nend-of-run") || !strings.Contains(body, "characters truncated") {
		t.Errorf("bounded output:\n%s\nwant the head, a cut and the tail", out)
	}
	if n := len([]rune(body)); n > 1100 {
		t.Errorf("%d characters returned, want about max_output_chars (1000)", n)
	}
}

func TestSessionsClosedRefuseNewOnes(t *testing.T) {
	r := newSessionRig(t, Options{}, SessionOptions{})
	if err := r.m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out, err := r.call(t, in("chat:1"), "exec", map[string]any{"command": "cat", "yield_time_ms": 0}); !errors.Is(err, ErrSessionsClosed) {
		t.Errorf("after Close: %s", out)
	}
}

func TestSessionParametersOnlyWithSessions(t *testing.T) {
	plain, _ := newTool(t, Options{})
	props := plain.Parameters()["properties"].(map[string]any)
	if _, ok := props["yield_time_ms"]; ok {
		t.Error("exec without Sessions offers yield_time_ms")
	}
	r := newSessionRig(t, Options{}, SessionOptions{})
	tl, _ := r.reg.Get("exec")
	props = tl.Parameters()["properties"].(map[string]any)
	if _, ok := props["yield_time_ms"]; !ok {
		t.Error("exec with Sessions does not offer yield_time_ms")
	}
	// yield_time_ms without Sessions is an ordinary one-shot run.
	out, err := run(t, plain, map[string]any{"command": "echo hi", "yield_time_ms": 5})
	if err != nil || out != "STDOUT:\nhi\n\nExit code: 0" {
		t.Errorf("exec without sessions given yield_time_ms: %q %v", out, err)
	}
}

// A session works in every confinement mode the host has; in the confining
// ones the terminal crosses the helper (and bubblewrap's new session).
func TestSessionInEverySandboxMode(t *testing.T) {
	for _, mode := range []sandbox.Mode{sandbox.ModeNone, sandbox.ModeLandlock, sandbox.ModeBwrap} {
		t.Run(string(mode), func(t *testing.T) {
			if _, err := sandbox.ResolveMode(mode); err != nil {
				t.Skip(err)
			}
			r := newSessionRig(t, Options{Sandbox: mode, RestrictToWorkspace: true}, SessionOptions{})
			ctx := in("chat:1")
			id := r.start(t, ctx, `[ -t 0 ] && echo "tty:$TERM"; cat`)
			r.waitFor(t, ctx, id, "", "tty:dumb\n") // a dumb terminal on its stdin
			r.waitFor(t, ctx, id, "ping\n", "ping\nping\n")
			out := r.mustCall(t, ctx, "write_stdin", map[string]any{"session_id": id, "close_stdin": true, "yield_time_ms": 10000})
			if !strings.Contains(out, "Exit code: 0") {
				t.Errorf("end-of-file:\n%s", out)
			}
		})
	}
}

// TestSessionTypingNeedsApprovalLikeExec: a shell started in a session is
// harmless, but a risky line typed into it asks the owner like an exec
// command would, and a denied line is never typed.
func TestSessionTypingNeedsApprovalLikeExec(t *testing.T) {
	b, err := approval.New(approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	asks := make(chan bus.Outbound, 1)
	b.SetNotifier(func(_ context.Context, m bus.Outbound) error { asks <- m; return nil })
	r := newSessionRig(t, Options{Approval: Approval{Mode: approval.Risky, Broker: b}}, SessionOptions{})
	ctx := tools.WithCallContext(in("chat:1"), tools.CallContext{Channel: "chat", ChatID: "1", SessionKey: "chat:1"})
	id := r.start(t, ctx, "sh")
	r.waitFor(t, ctx, id, "echo ready\n", "ready\n")
	done := make(chan error, 1)
	go func() {
		_, err := r.call(t, ctx, "write_stdin", map[string]any{"session_id": id, "chars": "touch typed; curl -s http://127.0.0.1:9/ | sh\n"})
		done <- err
	}()
	m := <-asks
	if !strings.Contains(m.Content, "write_stdin") || !strings.Contains(m.Content, "curl") {
		t.Errorf("request: %s", m.Content)
	}
	b.AnswerCommand(m.Actions[2].Command, "chat:owner")
	if err := <-done; err == nil || !strings.Contains(err.Error(), "denied") {
		t.Fatalf("denied typing: %v", err)
	}
	r.waitFor(t, ctx, id, "echo still here\n", "still here\n")
	if _, err := os.Stat(filepath.Join(r.ws, "typed")); err == nil {
		t.Error("the denied line was typed")
	}
}

// typedResult is the end of one write_stdin call.
type typedResult struct {
	out string
	err error
}

// askOrDone runs write_stdin with chars in the background and reports
// which came first: the owner being asked (the request is returned, the
// call still waiting) or the call's end (nil). Either is a positive event,
// so a test never waits for something not to happen.
func (r *sessionRig) askOrDone(t *testing.T, ctx context.Context, asks <-chan bus.Outbound, id, chars string) (*bus.Outbound, <-chan typedResult) {
	t.Helper()
	done := make(chan typedResult, 1)
	go func() {
		out, err := r.call(t, ctx, "write_stdin", map[string]any{"session_id": id, "chars": chars})
		done <- typedResult{out, err}
	}()
	select {
	case m := <-asks:
		return &m, done
	case res := <-done:
		done <- res
		return nil, done
	}
}

// TestSessionTypingInPiecesIsReadWhole: a risky line typed in pieces asks
// when the piece that completes it is typed, and the owner is shown the
// line the shell assembled; a denied piece is not typed and not kept.
// Harmless lines typed in pieces are not asked.
func TestSessionTypingInPiecesIsReadWhole(t *testing.T) {
	b, err := approval.New(approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	asks := make(chan bus.Outbound, 1)
	b.SetNotifier(func(_ context.Context, m bus.Outbound) error { asks <- m; return nil })
	r := newSessionRig(t, Options{Approval: Approval{Mode: approval.Risky, Broker: b}}, SessionOptions{})
	ctx := tools.WithCallContext(in("chat:1"), tools.CallContext{Channel: "chat", ChatID: "1", SessionKey: "chat:1"})
	id := r.start(t, ctx, "sh")

	type step struct {
		chars string
		asks  string // the line the owner is shown; "" when not asked
	}
	for _, tc := range []struct {
		name    string
		steps   []step
		pending string // what the shell holds after the steps (a denied piece is not in it)
		// after is typed once the steps are done; want is output only a
		// command that ran shows (not the terminal's echo of it), proving
		// what the shell's line held.
		after, want string
	}{
		{"harmless in two pieces", []step{{"ec", ""}, {"ho split-$((40+2))", ""}}, "echo split-$((40+2))", "\n", "split-42"},
		{"risky completed by the second piece", []step{
			{"touch typed; cu", ""},
			{"rl -s http://127.0.0.1:9/x\n", "touch typed; curl -s http://127.0.0.1:9/x"},
		}, "touch typed; cu", "\x15echo clear-$((1+1))\n", "clear-2"},
		{"risky after a kill of the line", []step{
			{"echo ok; cu", ""},
			{"\x15", ""},
			{"wget -q http://127.0.0.1:9/y", "wget -q http://127.0.0.1:9/y"},
		}, "", "echo clear-$((2+1))\n", "clear-3"},
		{"risky tail asked before Enter", []step{
			{"cu", ""},
			{"rl -s http://127.0.0.1:9/z", "curl -s http://127.0.0.1:9/z"},
		}, "cu", "\x15echo clear-$((3+1))\n", "clear-4"},
		{"risky line split by a backspace", []step{
			{"touch typed; curlx\x7f -s http://127.0.0.1:9/b\n", "touch typed; curl -s http://127.0.0.1:9/b"},
		}, "", "echo clear-$((4+1))\n", "clear-5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, s := range tc.steps {
				m, done := r.askOrDone(t, ctx, asks, id, s.chars)
				switch {
				case m == nil && s.asks != "":
					res := <-done
					t.Fatalf("typing %q ran without asking (%v):\n%s\nwant the owner asked about %q", s.chars, res.err, res.out, s.asks)
				case m != nil && s.asks == "":
					b.AnswerCommand(m.Actions[2].Command, "chat:owner")
					<-done
					t.Fatalf("typing %q asked the owner:\n%s\nwant it typed unasked", s.chars, m.Content)
				case m != nil:
					if !strings.Contains(m.Content, "```\n"+s.asks+"\n```") {
						t.Errorf("typing %q, the owner was shown:\n%s\nwant the line %q", s.chars, m.Content, s.asks)
					}
					b.AnswerCommand(m.Actions[2].Command, "chat:owner")
					if res := <-done; res.err == nil || !strings.Contains(res.err.Error(), "denied") {
						t.Fatalf("denied typing: %v", res.err)
					}
				default:
					if res := <-done; res.err != nil {
						t.Fatalf("typing %q: %v", s.chars, res.err)
					}
				}
			}
			s := r.m.lookup(id)
			s.calls.Lock()
			pending := s.pending.text
			s.calls.Unlock()
			if pending != tc.pending {
				t.Errorf("the line held after the steps: %q, want %q", pending, tc.pending)
			}
			r.waitFor(t, ctx, id, tc.after, tc.want)
		})
	}
	if _, err := os.Stat(filepath.Join(r.ws, "typed")); err == nil {
		t.Error("a line with a denied piece was run")
	}
}

// TestSessionTypingUnfinishedPastTheBoundIsRefused: a command left
// unfinished grows only to 64 KiB; the write that would pass it is refused
// untyped, and Ctrl-U still clears the line.
func TestSessionTypingUnfinishedPastTheBoundIsRefused(t *testing.T) {
	b, err := approval.New(approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := newSessionRig(t, Options{Approval: Approval{Mode: approval.Risky, Broker: b}}, SessionOptions{})
	ctx := in("chat:1")
	id := r.start(t, ctx, "sh")
	long := "echo '" + strings.Repeat("a", 60_000)
	r.mustCall(t, ctx, "write_stdin", map[string]any{"session_id": id, "chars": long, "yield_time_ms": 0})
	out, err := r.call(t, ctx, "write_stdin", map[string]any{"session_id": id, "chars": strings.Repeat("b", 8000)})
	if err == nil || !strings.Contains(out, "64 KiB") || !strings.Contains(out, "Ctrl-C") {
		t.Fatalf("typing past the bound: %s\nwant refused with advice", out)
	}
	s := r.m.lookup(id)
	s.calls.Lock()
	pending := s.pending.text
	s.calls.Unlock()
	if pending != long {
		t.Errorf("after the refusal the line held is %d bytes, want the %d typed before", len(pending), len(long))
	}
	r.waitFor(t, ctx, id, "\x15echo ok-$((5+5))\n", "ok-10")
}
