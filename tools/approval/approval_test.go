package approval

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// asked collects the messages a broker posts, so a test can answer them.
type asked struct {
	mu   sync.Mutex
	msgs []bus.Outbound
	ch   chan bus.Outbound
}

func newAsked() *asked { return &asked{ch: make(chan bus.Outbound, 16)} }

func (a *asked) notify(_ context.Context, m bus.Outbound) error {
	a.mu.Lock()
	a.msgs = append(a.msgs, m)
	a.mu.Unlock()
	a.ch <- m
	return nil
}

func (a *asked) next(t *testing.T) bus.Outbound {
	t.Helper()
	select {
	case m := <-a.ch:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no approval request posted")
		return bus.Outbound{}
	}
}

func req(action string) Request {
	return Request{Tool: "exec", Action: action, Reasons: []string{"network access"}, Channel: "telegram", ChatID: "1", SessionKey: "telegram:1"}
}

type result struct {
	d   Decision
	err error
}

func ask(b *Broker, ctx context.Context, r Request) chan result {
	out := make(chan result, 1)
	go func() { d, err := b.Ask(ctx, r); out <- result{d, err} }()
	return out
}

func TestAnswersReachTheWaitingCall(t *testing.T) {
	var saved []string
	audit := NewAudit(filepath.Join(t.TempDir(), "approvals.jsonl"))
	b, err := New(Options{Audit: audit, Remember: func(tool, p string) error { saved = append(saved, tool+" "+p); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	a := newAsked()
	b.SetNotifier(a.notify)
	for _, tc := range []struct {
		answer string
		want   Decision
	}{
		{"/approve %s", AllowOnce},
		{"/deny %s", Deny},
		{"/approve@nano_bot %s always", AllowAlways},
	} {
		got := ask(b, context.Background(), req("curl example.com #"+tc.answer))
		m := a.next(t)
		if len(m.Actions) != 3 || m.Channel != "telegram" || m.ChatID != "1" {
			t.Fatalf("request message: %+v", m)
		}
		id := strings.Fields(m.Actions[0].Command)[1]
		if !strings.Contains(m.Content, "/approve "+id) || !strings.Contains(m.Content, "curl example.com") {
			t.Errorf("the text does not name the command and the answers:\n%s", m.Content)
		}
		if n := len(b.Pending()); n != 1 {
			t.Errorf("%d pending, want 1", n)
		}
		reply, ok := b.AnswerCommand(strings.Replace(tc.answer, "%s", id, 1), "telegram:42")
		if !ok {
			t.Fatalf("%q not read as an answer", tc.answer)
		}
		r := <-got
		if r.d != tc.want || r.err != nil {
			t.Errorf("%s: got %v, %v; want %v", tc.answer, r.d, r.err, tc.want)
		}
		if !strings.Contains(reply, "curl example.com") {
			t.Errorf("reply %q does not say what was answered", reply)
		}
		if _, again := b.AnswerCommand("/approve "+id, "telegram:42"); !again || len(b.Pending()) != 0 {
			t.Error("an answered request is still pending")
		}
	}
	if len(saved) != 1 || !strings.HasPrefix(saved[0], "exec ^curl example\\.com") {
		t.Errorf("remembered %q", saved)
	}
	// The remembered action runs unasked; another does not.
	if d, err := b.Ask(context.Background(), req("curl example.com #/approve@nano_bot %s always")); d != AllowOnce || err != nil {
		t.Errorf("remembered action: %v %v", d, err)
	}
	entries, err := audit.Recent(100)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, e := range entries {
		outcomes = append(outcomes, e.Outcome)
	}
	want := "approved by pattern,allowed always,asked,denied,asked,allowed once,asked"
	if got := strings.Join(outcomes, ","); got != want {
		t.Errorf("audit outcomes, newest first:\n got %s\nwant %s", got, want)
	}
	if entries[1].By != "telegram:42" {
		t.Errorf("audit by = %q", entries[1].By)
	}
}

func TestNoAnswerIsNo(t *testing.T) {
	b, err := New(Options{Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	d, err := b.Ask(context.Background(), req("curl x"))
	if d != Deny || err == nil || !strings.Contains(err.Error(), "no answer") {
		t.Errorf("timeout: %v %v", d, err)
	}
	if len(b.Pending()) != 0 {
		t.Error("a timed-out request is still pending")
	}

	b, _ = New(Options{})
	a := newAsked()
	b.SetNotifier(a.notify)
	ctx, cancel := context.WithCancel(context.Background())
	got := ask(b, ctx, req("curl y"))
	id := strings.Fields(a.next(t).Actions[0].Command)[1]
	cancel()
	if r := <-got; r.d != Deny || !errors.Is(r.err, context.Canceled) {
		t.Errorf("cancelled: %v %v", r.d, r.err)
	}
	if _, err := b.Answer(id, AllowOnce, "x"); !errors.Is(err, ErrUnknown) {
		t.Errorf("answering a cancelled request: %v", err)
	}
}

func TestARequestWithoutAChatWaitsInPending(t *testing.T) {
	b, _ := New(Options{})
	a := newAsked()
	b.SetNotifier(a.notify)
	r := req("curl z")
	r.Channel, r.ChatID = "api", ""
	got := ask(b, context.Background(), r)
	var p []Request
	waitfor.True(t, "the request pending", func() bool { p = b.Pending(); return len(p) == 1 })
	if _, err := b.Answer(p[0].ID, AllowOnce, "workbench"); err != nil {
		t.Fatal(err)
	}
	if res := <-got; res.d != AllowOnce {
		t.Errorf("got %v", res.d)
	}
	if len(a.msgs) != 0 {
		t.Errorf("a request without a chat was posted: %+v", a.msgs)
	}
}

func TestRememberFailureStillAllows(t *testing.T) {
	b, _ := New(Options{Remember: func(string, string) error { return errors.New("read-only") }})
	a := newAsked()
	b.SetNotifier(a.notify)
	got := ask(b, context.Background(), req("wget q"))
	id := strings.Fields(a.next(t).Actions[0].Command)[1]
	reply, _ := b.AnswerCommand("/approve "+id+" always", "x")
	if r := <-got; r.d != AllowAlways {
		t.Errorf("got %v", r.d)
	}
	if !strings.Contains(reply, "not saved") {
		t.Errorf("reply %q does not say the pattern was not saved", reply)
	}
	if !b.Approved("exec", "wget q") {
		t.Error("the pattern does not hold until restart")
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		want Decision
	}{
		{"/approve ab12", true, AllowOnce}, {"/APPROVE ab12 ALWAYS", true, AllowAlways}, {"/deny ab12", true, Deny},
		{"/approve", false, Deny}, {"/approve a b", false, Deny}, {"/deny a always", false, Deny}, {"approve a", false, Deny},
	} {
		_, d, ok := ParseAnswer(tc.in)
		if ok != tc.ok || d != tc.want {
			t.Errorf("ParseAnswer(%q) = %v %v", tc.in, d, ok)
		}
	}
	if _, err := ParseMode("sometimes"); err == nil {
		t.Error("a bad mode parsed")
	}
	if _, err := New(Options{Approved: map[string][]string{"exec": {"("}}}); err == nil {
		t.Error("a bad pattern was taken")
	}
}

// TestAuditMasksSecrets: a command carrying a secret is recorded masked.
func TestAuditMasksSecrets(t *testing.T) {
	audit := NewAudit(filepath.Join(t.TempDir(), "approvals.jsonl"))
	b, _ := New(Options{Audit: audit, Timeout: time.Millisecond, Redact: func(s string) string { return strings.ReplaceAll(s, "sk-live-123", "[redacted]") }})
	_, _ = b.Ask(context.Background(), req("curl -H 'Authorization: Bearer sk-live-123' https://x"))
	entries, err := audit.Recent(10)
	if err != nil || len(entries) == 0 {
		t.Fatalf("%v %v", entries, err)
	}
	for _, e := range entries {
		if strings.Contains(e.Action, "sk-live-123") || !strings.Contains(e.Action, "[redacted]") {
			t.Errorf("audit entry %q", e.Action)
		}
	}
}

// TestTwoAnswersAtOnceAndABrokenAuditLog: two admins answering the same
// request at once — one answer counts, the other is told it is gone; an
// audit log that cannot be written (a full disk) is logged and changes
// nothing else.
func TestTwoAnswersAtOnceAndABrokenAuditLog(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "log")
	if err := os.Mkdir(bad, 0o700); err != nil { // a folder where the file should be: every append fails
		t.Fatal(err)
	}
	b, _ := New(Options{Audit: NewAudit(bad)})
	a := newAsked()
	b.SetNotifier(a.notify)
	got := ask(b, context.Background(), req("curl once"))
	id := strings.Fields(a.next(t).Actions[0].Command)[1]
	errs := make(chan error, 2)
	for _, d := range []Decision{AllowOnce, Deny} {
		go func() { _, err := b.Answer(id, d, "x"); errs <- err }()
	}
	e1, e2 := <-errs, <-errs
	if (e1 == nil) == (e2 == nil) || !errors.Is(errors.Join(e1, e2), ErrUnknown) {
		t.Errorf("two answers: %v, %v; want one taken and one unknown", e1, e2)
	}
	if r := <-got; r.err != nil {
		t.Errorf("the waiting call: %v", r.err)
	}
}
