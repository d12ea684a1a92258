package shell

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/tools"
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
}

func newSessionRig(t *testing.T, opts Options, sopts SessionOptions) *sessionRig {
	t.Helper()
	if !ptySupported {
		t.Skip("no pseudo-terminals on this platform")
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
	for _, tl := range append([]tools.Tool{tool}, SessionTools(m)...) {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	return &sessionRig{m: m, reg: reg, ws: ws}
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

var sessionIDRe = regexp.MustCompile(`session_id: ([0-9a-f]+)`)

// start runs command as a session of ctx's conversation and returns its id.
func (r *sessionRig) start(t *testing.T, ctx context.Context, command string) string {
	t.Helper()
	out := r.mustCall(t, ctx, "exec", map[string]any{"command": command, "yield_time_ms": 0})
	m := sessionIDRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("exec %q: no session_id in\n%s", command, out)
	}
	return m[1]
}

func TestSessionEchoAndEOF(t *testing.T) {
	r := newSessionRig(t, Options{}, SessionOptions{})
	ctx := in("chat:1")
	id := r.start(t, ctx, "cat")
	out := r.mustCall(t, ctx, "write_stdin", map[string]any{"session_id": id, "chars": "hello there\n", "wait_for": "hello there\nhello there"})
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
