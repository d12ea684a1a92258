package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/outbox"
	"github.com/nanobot-go/nanobot/gateway/relay"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// platform is a chat platform: it shows messages, can edit them, and (when
// idempotent) treats a send with a key it has seen as the same message.
type platform struct {
	idempotent bool

	mu     sync.Mutex
	shown  []string       // message texts, in order
	byKey  map[string]int // idempotency key -> message index
	keys   []string       // key of every send call
	onSend func(n int)    // called after the platform accepted send number n (1-based)
	calls  int
}

func newPlatform(idempotent bool) *platform {
	return &platform{idempotent: idempotent, byKey: map[string]int{}}
}

func (p *platform) Name() string                                    { return "tg" }
func (p *platform) Run(ctx context.Context, _ channels.Inbox) error { <-ctx.Done(); return nil }
func (p *platform) EditInterval() time.Duration                     { return time.Millisecond }
func (p *platform) MessageLimit() int                               { return 40 }

func (p *platform) Send(_ context.Context, m bus.Outbound) (channels.MessageRef, error) {
	p.mu.Lock()
	p.calls++
	n := p.calls
	p.keys = append(p.keys, m.IdempotencyKey)
	i, ok := p.byKey[m.IdempotencyKey]
	if !ok || !p.idempotent || m.IdempotencyKey == "" {
		p.shown = append(p.shown, m.Content)
		i = len(p.shown) - 1
		p.byKey[m.IdempotencyKey] = i
	}
	hook := p.onSend
	p.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: fmt.Sprint(i)}, nil
}

func (p *platform) Edit(_ context.Context, ref channels.MessageRef, m bus.Outbound) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var i int
	if _, err := fmt.Sscan(ref.MessageID, &i); err != nil || i >= len(p.shown) {
		return &channels.PermanentError{Err: errors.New("no such message")}
	}
	p.shown[i] = m.Content
	return nil
}

func (p *platform) messages() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.shown...)
}

// hooked lets a test act just before a delivery is recorded finished.
type hooked struct {
	*outbox.Outbox
	beforeFinished func()
}

func (h hooked) Finished(id string, o relay.Outcome) {
	if h.beforeFinished != nil {
		h.beforeFinished()
	}
	h.Outbox.Finished(id, o)
}

// run is one gateway process: an outbox opened from path and a dispatcher
// delivering to p. Its pending replies are queued first.
type run struct {
	ob   *outbox.Outbox
	out  chan bus.Outbound
	stop func()
}

func start(t *testing.T, path string, p *platform, beforeFinished func()) *run {
	t.Helper()
	ob, pending, err := outbox.Open(path, outbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan bus.Outbound, 64)
	for _, m := range pending {
		out <- m
	}
	d := relay.NewDispatcher(relay.DispatcherConfig{RetryBase: time.Millisecond, Delivery: hooked{ob, beforeFinished}}, []channels.Channel{p})
	done := make(chan struct{})
	go func() { _ = d.Run(ctx, out); close(done) }()
	r := &run{ob: ob, out: out}
	r.stop = func() { cancel(); <-done; _ = ob.Close() }
	t.Cleanup(r.stop)
	return r
}

// publish records m in the outbox and queues it, as the gateway does.
func (r *run) publish(t *testing.T, m bus.Outbound) {
	t.Helper()
	m.Channel, m.ChatID = "tg", "c"
	m, send, err := r.ob.Record(m)
	if err != nil {
		t.Fatal(err)
	}
	if !send {
		return
	}
	r.out <- m
}

func (r *run) drain(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for r.ob.Pending() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d replies still pending", r.ob.Pending())
		}
		time.Sleep(time.Millisecond)
	}
}

// snapshot is what a kill -9 leaves on disk at this moment.
type snapshot struct {
	path string
	data []byte
	once sync.Once
}

func (s *snapshot) take() {
	s.once.Do(func() { s.data, _ = os.ReadFile(s.path) })
}

// crash stops the run and puts the file back as it was at the snapshot.
func (s *snapshot) crash(t *testing.T, r *run) {
	t.Helper()
	r.stop()
	if s.data == nil {
		t.Fatal("the crash point was never reached")
	}
	if err := os.WriteFile(s.path, s.data, 0o600); err != nil {
		t.Fatal(err)
	}
}

const long = "first part of the answer\n\nsecond part of the answer"

// Kill -9 at every step of a reply's delivery, restart from what is on
// disk: each reply is shown exactly once (no loss, no duplicate).
func TestCrashAtEveryStep(t *testing.T) {
	reply := bus.Outbound{Kind: bus.KindStreamEnd, StreamID: "s1", Turn: "7", Final: true, Content: "the answer"}
	for _, tc := range []struct {
		name       string
		msg        bus.Outbound
		idempotent bool
		crashAt    string
		want       []string
	}{
		{name: "recorded, not sent", msg: reply, crashAt: "recorded", want: []string{"the answer"}},
		{name: "platform accepted, sent not recorded", msg: reply, idempotent: true, crashAt: "accepted", want: []string{"the answer"}},
		{name: "sent recorded, not finished", msg: reply, crashAt: "before-finished", want: []string{"the answer"}},
		{name: "finished, inbox not done (turn replayed)", msg: reply, crashAt: "finished", want: []string{"the answer"}},
		{name: "part 1 of 2 sent and recorded", msg: bus.Outbound{Kind: bus.KindMessage, Turn: "8", Final: true, Content: long}, crashAt: "second-accepted-idempotent", idempotent: true,
			want: []string{"first part of the answer", "second part of the answer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "outbox.jsonl")
			p := newPlatform(tc.idempotent)
			snap := &snapshot{path: path}
			var beforeFinished func()
			switch tc.crashAt {
			case "accepted":
				p.onSend = func(int) { snap.take() }
			case "second-accepted-idempotent":
				p.onSend = func(n int) {
					if n == 2 {
						snap.take()
					}
				}
			case "before-finished":
				beforeFinished = snap.take
			}
			if tc.crashAt == "recorded" {
				// Dead right after recording, before any delivery.
				ob, _, err := outbox.Open(path, outbox.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := ob.Add(withTarget(tc.msg)); err != nil {
					t.Fatal(err)
				}
				_ = ob.Close()
			} else {
				r := start(t, path, p, beforeFinished)
				r.publish(t, tc.msg)
				r.drain(t)
				snap.take() // "finished": the final state is the crash point
				snap.crash(t, r)
			}

			r2 := start(t, path, p, nil)
			// The inbox replays the turn (it was never marked done): the
			// agent answers it again; the outbox keeps it from going out.
			again := tc.msg
			again.StreamID = "s2"
			if again.Kind == bus.KindStreamEnd {
				r2.publish(t, bus.Outbound{Kind: bus.KindDelta, StreamID: "s2", Turn: again.Turn, Content: "the answer"})
			}
			r2.publish(t, again)
			r2.drain(t)
			if got := p.messages(); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("platform shows %q, want %q", got, tc.want)
			}
		})
	}
}

func withTarget(m bus.Outbound) bus.Outbound {
	m.Channel, m.ChatID = "tg", "c"
	return m
}

// Without platform idempotency the one window left (accepted, not yet
// recorded) repeats the message, with the same key both times: delivery is
// at-least-once there, and the key lets platforms that support it fix it.
func TestCrashBetweenAcceptAndRecordWithoutIdempotency(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.jsonl")
	p := newPlatform(false)
	snap := &snapshot{path: path}
	p.onSend = func(int) { snap.take() }
	r := start(t, path, p, nil)
	r.publish(t, bus.Outbound{Kind: bus.KindMessage, Turn: "1", Final: true, Content: "hi"})
	r.drain(t)
	snap.crash(t, r)
	r2 := start(t, path, p, nil)
	r2.drain(t)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.keys) != 2 || p.keys[0] == "" || p.keys[0] != p.keys[1] {
		t.Errorf("send keys %q, want the same key twice", p.keys)
	}
}

// A turn that streamed part of its answer and then died: the next attempt
// (inbox replay) finishes that message by editing it.
func TestCrashMidStreamFinishesTheSameMessage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.jsonl")
	p := newPlatform(false)
	r := start(t, path, p, nil)
	r.publish(t, bus.Outbound{Kind: bus.KindDelta, StreamID: "s1", Turn: "3", Content: "Let me think"})
	// The crash point is after the outbox recorded the shown message: the
	// platform shows it a moment before the record is written, and a
	// crash in between sends a new message (the at-least-once window).
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if len(p.messages()) > 0 && strings.Contains(string(b), `"op":"stream"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stream never showed, or was never recorded")
		}
		time.Sleep(time.Millisecond)
	}
	snap := &snapshot{path: path}
	snap.take()
	snap.crash(t, r)

	r2 := start(t, path, p, nil)
	r2.publish(t, bus.Outbound{Kind: bus.KindDelta, StreamID: "s9", Turn: "3", Content: "The answer"})
	r2.publish(t, bus.Outbound{Kind: bus.KindStreamEnd, StreamID: "s9", Turn: "3", Final: true, Content: "The answer is 42."})
	r2.drain(t)
	if got := p.messages(); len(got) != 1 || got[0] != "The answer is 42." {
		t.Errorf("platform shows %q, want one message with the final answer", got)
	}
}

// A turn cut off mid-stream by a shutdown ends its stream as interrupted
// (the message shows the text so far, finished) and is replayed at the
// next start: the replay's answer edits that same message.
func TestShutdownMidStreamFinishesTheSameMessage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.jsonl")
	p := newPlatform(false)
	r := start(t, path, p, nil)
	r.publish(t, bus.Outbound{Kind: bus.KindDelta, StreamID: "s1", Turn: "3", Content: "Let me think"})
	waitfor.True(t, "the stream shown", func() bool { _, shown := r.ob.StreamMessage("3"); return shown })
	r.publish(t, bus.Outbound{Kind: bus.KindStreamEnd, StreamID: "s1", Turn: "3", Content: "Let me think", Interrupted: true})
	r.drain(t)
	if got := p.messages(); len(got) != 1 || got[0] != "Let me think" {
		t.Fatalf("platform shows %q before the restart, want the text so far", got)
	}
	r.stop()

	r2 := start(t, path, p, nil)
	r2.publish(t, bus.Outbound{Kind: bus.KindDelta, StreamID: "s9", Turn: "3", Content: "The answer"})
	r2.publish(t, bus.Outbound{Kind: bus.KindStreamEnd, StreamID: "s9", Turn: "3", Final: true, Content: "The answer is 42."})
	r2.drain(t)
	if got := p.messages(); len(got) != 1 || got[0] != "The answer is 42." {
		t.Errorf("platform shows %q, want one message with the final answer", got)
	}
}
