package repl

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
)

// scriptAgent answers every message with deltas then a final message, via
// the REPL's Outbox.
type scriptAgent struct {
	r       *REPL
	mu      sync.Mutex
	got     []bus.Inbound
	stopped []string
	fail    bool
}

func (s *scriptAgent) Submit(ctx context.Context, m bus.Inbound) {
	s.mu.Lock()
	s.got = append(s.got, m)
	s.mu.Unlock()
	go func() {
		if s.fail {
			_ = s.r.PublishOutbound(ctx, bus.Outbound{Kind: bus.KindMessage, Content: "Sorry, no provider.", Final: true, IsError: true})
			return
		}
		_ = s.r.PublishOutbound(ctx, bus.Outbound{Kind: bus.KindToolHint, Content: "exec: ls"})
		for _, d := range []string{"**Hi** ", "there"} {
			_ = s.r.PublishOutbound(ctx, bus.Outbound{Kind: bus.KindDelta, Content: d})
		}
		_ = s.r.PublishOutbound(ctx, bus.Outbound{Kind: bus.KindStreamEnd, Content: "**Hi** there", Final: true})
	}()
}

func (s *scriptAgent) Idle() bool { return true }

func (s *scriptAgent) StopSession(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = append(s.stopped, key)
	return 1
}

func TestAskOneShot(t *testing.T) {
	var out, errb bytes.Buffer
	r := New(Options{SessionKey: "cli:direct", Stdout: &out, Stderr: &errb})
	a := &scriptAgent{r: r}
	r.SetAgent(a)
	reply, err := r.Ask(context.Background(), "hello", &out, nil)
	if err != nil || reply != "**Hi** there" {
		t.Fatalf("Ask = %q, %v", reply, err)
	}
	if out.String() != "**Hi** there\n" {
		t.Errorf("stdout %q: one-shot prints only the reply", out.String())
	}
	if a.got[0].Key() != "cli:direct" || a.got[0].Content != "hello" || !a.got[0].Admin {
		t.Errorf("submitted %+v (the terminal is the owner's: an admin)", a.got[0])
	}
	a.fail = true
	out.Reset()
	_, err = r.Ask(context.Background(), "again", &out, nil)
	if !errors.Is(err, ErrReply) || out.Len() != 0 {
		t.Errorf("error reply: err %v, stdout %q", err, out.String())
	}
}

func TestInteractiveRendersMarkdown(t *testing.T) {
	var out, errb bytes.Buffer
	r := New(Options{Markdown: true, ShowToolHints: true, Stdin: strings.NewReader("hello\n\nsecond\nexit\nignored\n"), Stdout: &out, Stderr: &errb})
	a := &scriptAgent{r: r}
	r.SetAgent(a)
	if err := r.Interactive(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(a.got) != 2 {
		t.Errorf("submitted %d messages, want 2 (blank skipped, exit stops)", len(a.got))
	}
	if !strings.Contains(out.String(), ansiBold+"Hi"+ansiReset+" there") {
		t.Errorf("markdown not rendered: %q", out.String())
	}
	if !strings.Contains(errb.String(), "🔧 exec: ls") {
		t.Errorf("tool hint missing: %q", errb.String())
	}
}
