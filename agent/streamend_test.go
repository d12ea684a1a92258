package agent

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/relay"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
)

// Every stream a turn opens is closed, whichever way the turn ends: the
// tests below take each way a turn can stop before its answer, run it
// against a real Dispatcher, and check that the dispatcher is left holding
// no stream and its chat worker retires.

// stallLLM streams "partial answer" for a request whose last user message
// ends in "slow", then fails with fail, or (fail nil) blocks until its
// context ends. Other requests go to fakeLLM.
type stallLLM struct {
	*fakeLLM
	fail     error
	streamed chan struct{} // closed once the partial text went out
	once     sync.Once
}

func newStallLLM(fail error) *stallLLM {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("all answered") }}
	return &stallLLM{fakeLLM: llm, fail: fail, streamed: make(chan struct{})}
}

func (s *stallLLM) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	if !strings.HasSuffix(lastUser(req), "slow") {
		return s.fakeLLM.Stream(ctx, req, onDelta)
	}
	onDelta(providers.Delta{Content: "partial "})
	onDelta(providers.Delta{Content: "answer"})
	s.once.Do(func() { close(s.streamed) })
	if s.fail != nil {
		return nil, s.fail
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// screen is an editing, finishing channel named "test" that records what
// it shows.
type screen struct {
	mu       sync.Mutex
	sent     []string
	edits    []string
	finished []string // message ids
	shown    []string // each message as it reads now (sent, then edited)
}

func (s *screen) Name() string                                    { return "test" }
func (s *screen) Run(ctx context.Context, _ channels.Inbox) error { <-ctx.Done(); return nil }
func (s *screen) EditInterval() time.Duration                     { return 4 * time.Millisecond }

func (s *screen) Send(_ context.Context, m bus.Outbound) (channels.MessageRef, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, m.Content)
	s.shown = append(s.shown, m.Content)
	return channels.MessageRef{ChatID: m.ChatID, MessageID: fmt.Sprint(len(s.sent))}, nil
}

func (s *screen) Edit(_ context.Context, ref channels.MessageRef, m bus.Outbound) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.edits = append(s.edits, m.Content)
	if i, err := strconv.Atoi(ref.MessageID); err == nil && i >= 1 && i <= len(s.shown) {
		s.shown[i-1] = m.Content
	}
	return nil
}

func (s *screen) Finish(_ context.Context, ref channels.MessageRef) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finished = append(s.finished, ref.MessageID)
	return nil
}

func (s *screen) snapshot() (shown, finished []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.shown...), append([]string(nil), s.finished...)
}

// tee publishes to the harness's outbox and to a dispatcher's queue.
type tee struct {
	*outbox
	out chan<- bus.Outbound
}

func (t tee) PublishOutbound(ctx context.Context, m bus.Outbound) error {
	_ = t.outbox.PublishOutbound(ctx, m)
	select {
	case t.out <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dispatchTo makes h's loop publish through a real Dispatcher to a screen
// as well, until the test ends.
func dispatchTo(t *testing.T, h *harness) (*relay.Dispatcher, *screen) {
	t.Helper()
	sc := &screen{}
	d := relay.NewDispatcher(relay.DispatcherConfig{WorkerIdle: 10 * time.Millisecond}, []channels.Channel{sc})
	out := make(chan bus.Outbound, 256)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.Run(ctx, out)
	}()
	t.Cleanup(func() { cancel(); <-done })
	h.loop.cfg.Out = tee{outbox: h.out, out: out}
	return d, sc
}

// streamsClosed checks that every stream the loop opened got exactly one
// end, and waits until the dispatcher holds no stream and its chat worker
// retired.
func streamsClosed(t *testing.T, h *harness, d *relay.Dispatcher) {
	t.Helper()
	waitfor.True(t, "the loop idle", h.loop.Idle)
	defer func() {
		if t.Failed() {
			t.Logf("the dispatcher holds %+v", d.Stats())
		}
	}()
	waitfor.True(t, "the dispatcher to hold no stream and its chat worker to retire", func() bool {
		s := d.Stats()
		return s.Streams == 0 && s.Chats == 0
	})
	opened, ends := map[string]bool{}, map[string]int{}
	for _, m := range h.out.all() {
		switch m.Kind {
		case bus.KindDelta:
			opened[m.StreamID] = true
		case bus.KindStreamEnd:
			ends[m.StreamID]++
		}
	}
	if len(opened) == 0 {
		t.Fatal("no stream was opened: the test did not test anything")
	}
	for id := range opened {
		if ends[id] != 1 {
			t.Errorf("stream %s had deltas and %d ends, want 1", id, ends[id])
		}
	}
}

// interruptedEnd returns the interrupted stream end the loop published.
func interruptedEnd(t *testing.T, h *harness) bus.Outbound {
	t.Helper()
	for _, m := range h.out.all() {
		if m.Kind == bus.KindStreamEnd && m.Interrupted {
			if m.Final || m.Content != "partial answer" {
				t.Errorf("interrupted end %+v, want the text so far and not Final", m)
			}
			return m
		}
	}
	t.Fatal("no interrupted stream end was published")
	return bus.Outbound{}
}

// /stop: the partial answer on screen is finished, nothing new is sent but
// the "Stopped." reply.
func TestStopClosesTheStream(t *testing.T) {
	llm := newStallLLM(nil)
	h := newHarness(t, llm.fakeLLM, nil, func(c *LoopConfig) { c.Runner.Provider = llm })
	d, sc := dispatchTo(t, h)
	h.send("c", "answer slow")
	<-llm.streamed
	waitfor.True(t, "the partial answer on screen", func() bool { shown, _ := sc.snapshot(); return len(shown) == 1 })
	h.send("c", "/stop")
	streamsClosed(t, h, d)
	interruptedEnd(t, h)
	// The first send may hold only the first delta (a busy machine); by
	// the end the message reads the whole partial answer.
	shown, finished := sc.snapshot()
	if strings.Join(shown, "|") != "partial answer|Stopped." {
		t.Errorf("on screen %q, want the partial answer and the stop reply", shown)
	}
	if len(finished) != 1 || finished[0] != "1" {
		t.Errorf("finished messages %q, want the partial answer's", finished)
	}
}

// Interrupt mode: a newer message cancels the turn; the stream it had
// opened is closed, and the next turn answers both.
func TestInterruptModeClosesTheStream(t *testing.T) {
	llm := newStallLLM(nil)
	h := newHarness(t, llm.fakeLLM, nil, func(c *LoopConfig) {
		queueMode(configs.QueueInterrupt)(c)
		c.Runner.Provider = llm
	})
	d, _ := dispatchTo(t, h)
	h.send("c", "answer slow")
	<-llm.streamed
	h.send("c", "and quickly")
	waitfor.True(t, "both messages done", func() bool { return h.doneCount() == 2 })
	streamsClosed(t, h, d)
	interruptedEnd(t, h)
	if got := h.out.finals()["test:c"]; len(got) != 1 || got[0] != "all answered" {
		t.Errorf("final replies %q, want the one answer to both", got)
	}
}

// A provider that fails mid-stream (the model server died): the stream is
// closed before the error reply goes out.
func TestProviderErrorMidStreamClosesTheStream(t *testing.T) {
	llm := newStallLLM(&providers.Error{Provider: "test", StatusCode: 502, Transient: true, Message: "connection reset"})
	h := newHarness(t, llm.fakeLLM, nil, func(c *LoopConfig) { c.Runner.Provider = llm })
	d, _ := dispatchTo(t, h)
	h.send("c", "answer slow")
	waitfor.True(t, "the turn done", func() bool { return h.doneCount() == 1 })
	streamsClosed(t, h, d)
	end := interruptedEnd(t, h)
	all := h.out.all()
	last := all[len(all)-1]
	if !last.IsError || !last.Final {
		t.Fatalf("last message %+v, want the error reply", last)
	}
	for _, m := range all {
		if m.StreamID == end.StreamID && m.Kind == bus.KindStreamEnd {
			break
		}
		if m.IsError {
			t.Error("the error reply went out before the stream was closed")
		}
	}
}

// The loop's context ends mid-stream (the gateway stops after its drain
// timeout): the stream is closed all the same.
func TestShutdownClosesTheStream(t *testing.T) {
	llm := newStallLLM(nil)
	h := newHarness(t, llm.fakeLLM, nil, func(c *LoopConfig) { c.Runner.Provider = llm })
	d, _ := dispatchTo(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.loop.Submit(ctx, bus.Inbound{Channel: "test", ChatID: "c", SenderID: "u", Content: "answer slow", MessageID: "m1"})
	<-llm.streamed
	cancel()
	streamsClosed(t, h, d)
	interruptedEnd(t, h)
}
