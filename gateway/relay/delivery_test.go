package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// memLog is an in-memory DeliveryLog.
type memLog struct {
	mu       sync.Mutex
	queued   map[string]time.Time
	parts    map[string]map[int]channels.MessageRef
	outcomes map[string]Outcome
	streams  map[string]channels.MessageRef
	done     chan string
}

func newMemLog() *memLog {
	return &memLog{queued: map[string]time.Time{}, parts: map[string]map[int]channels.MessageRef{}, outcomes: map[string]Outcome{},
		streams: map[string]channels.MessageRef{}, done: make(chan string, 100)}
}

func (l *memLog) Queued(id string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.queued[id]
}
func (l *memLog) queue(id string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queued[id] = at
}
func (l *memLog) SentParts(id string) map[int]channels.MessageRef {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[int]channels.MessageRef{}
	for i, r := range l.parts[id] {
		out[i] = r
	}
	return out
}
func (l *memLog) PartSent(id string, part int, ref channels.MessageRef) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.parts[id] == nil {
		l.parts[id] = map[int]channels.MessageRef{}
	}
	l.parts[id][part] = ref
	return nil
}
func (l *memLog) Finished(id string, o Outcome) {
	l.mu.Lock()
	l.outcomes[id] = o
	l.mu.Unlock()
	l.done <- id
}
func (l *memLog) StreamMessage(turn string) (channels.MessageRef, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.streams[turn]
	return r, ok
}
func (l *memLog) StreamStarted(turn string, ref channels.MessageRef) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.streams[turn] = ref
}

func (l *memLog) wait(t *testing.T, n int) map[string]Outcome {
	t.Helper()
	for range n {
		select {
		case <-l.done:
		case <-time.After(10 * time.Second):
			t.Fatal("deliveries did not finish")
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]Outcome{}
	for k, v := range l.outcomes {
		out[k] = v
	}
	return out
}

// downChannel fails every send with a transient error while down.
type downChannel struct {
	*fakeChannel
	down     atomic.Bool
	failures atomic.Int64
	err      error // returned while down (default a transient error)
}

func (d *downChannel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	if d.down.Load() {
		d.failures.Add(1)
		if d.err != nil {
			return channels.MessageRef{}, d.err
		}
		return channels.MessageRef{}, errors.New("connection refused")
	}
	return d.fakeChannel.Send(ctx, m)
}

func startDurable(t *testing.T, cfg DispatcherConfig, ch channels.Channel) chan<- bus.Outbound {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan bus.Outbound, 100)
	d := NewDispatcher(cfg, []channels.Channel{ch})
	done := make(chan struct{})
	go func() { _ = d.Run(ctx, out); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return out
}

// A platform down for far longer than MaxRetries allows: every durable
// reply is delivered once it is back, in order per chat, none lost (they
// used to be given up after 1+3 attempts).
func TestDurableRepliesSurviveOutage(t *testing.T) {
	ch := &downChannel{fakeChannel: &fakeChannel{name: "tg"}}
	ch.down.Store(true)
	log := newMemLog()
	out := startDurable(t, DispatcherConfig{MaxRetries: 3, RetryBase: time.Millisecond, RetryMax: 4 * time.Millisecond, Delivery: log}, ch)
	var want []string
	for i := 1; i <= 6; i++ {
		chat := fmt.Sprint("chat", i%2)
		id := fmt.Sprint(i)
		log.queue(id, time.Now())
		out <- bus.Outbound{Channel: "tg", ChatID: chat, Kind: bus.KindMessage, Content: "reply " + id, ID: id}
		want = append(want, chat+":reply "+id)
	}
	// Down until well past the old retry budget in both chats.
	waitfor.True(t, "30 failed sends", func() bool { return ch.failures.Load() >= 30 })
	ch.down.Store(false)
	outcomes := log.wait(t, 6)
	for id, o := range outcomes {
		if o != OutcomeSent {
			t.Errorf("message %s: outcome %s", id, o)
		}
	}
	sent, _ := ch.snapshot()
	perChat := map[string][]string{}
	for _, m := range sent {
		perChat[m.ChatID] = append(perChat[m.ChatID], m.Content)
		if m.IdempotencyKey != m.ID+".0" {
			t.Errorf("idempotency key %q for message %s", m.IdempotencyKey, m.ID)
		}
	}
	if got := strings.Join(perChat["chat1"], ","); got != "reply 1,reply 3,reply 5" {
		t.Errorf("chat1 got %s", got)
	}
	if got := strings.Join(perChat["chat0"], ","); got != "reply 2,reply 4,reply 6" {
		t.Errorf("chat0 got %s", got)
	}
	if len(sent) != 6 {
		t.Errorf("%d sends, want 6", len(sent))
	}
}

// Past MaxAge a durable reply is given up (counted as expired) and the
// chat goes on with the next one.
func TestDurableReplyExpires(t *testing.T) {
	ch := &downChannel{fakeChannel: &fakeChannel{name: "tg"}}
	ch.down.Store(true)
	log := newMemLog()
	out := startDurable(t, DispatcherConfig{RetryBase: time.Millisecond, RetryMax: 2 * time.Millisecond, MaxAge: time.Hour, Delivery: log}, ch)
	log.queue("1", time.Now().Add(-2*time.Hour)) // recorded long ago (before a restart)
	log.queue("2", time.Now())
	out <- bus.Outbound{Channel: "tg", ChatID: "c", Kind: bus.KindMessage, Content: "old", ID: "1"}
	if o := log.wait(t, 1)["1"]; o != OutcomeExpired {
		t.Fatalf("outcome %s, want expired", o)
	}
	ch.down.Store(false)
	out <- bus.Outbound{Channel: "tg", ChatID: "c", Kind: bus.KindMessage, Content: "new", ID: "2"}
	if o := log.wait(t, 1)["2"]; o != OutcomeSent {
		t.Fatalf("outcome %s, want sent", o)
	}
	if sent, _ := ch.snapshot(); len(sent) != 1 || sent[0].Content != "new" {
		t.Errorf("sent %+v", sent)
	}
}

// A permanent error (chat gone, bot blocked) is not retried.
func TestDurablePermanentErrorNotRetried(t *testing.T) {
	ch := &downChannel{fakeChannel: &fakeChannel{name: "tg"}, err: channels.Permanentf("chat not found")}
	ch.down.Store(true)
	log := newMemLog()
	out := startDurable(t, DispatcherConfig{RetryBase: time.Millisecond, Delivery: log}, ch)
	log.queue("1", time.Now())
	out <- bus.Outbound{Channel: "tg", ChatID: "c", Kind: bus.KindMessage, Content: "x", ID: "1"}
	if o := log.wait(t, 1)["1"]; o != OutcomeRefused {
		t.Fatalf("outcome %s, want refused", o)
	}
	if n := ch.failures.Load(); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
}

// Parts recorded as sent (before a restart) are skipped; the others carry
// keys that stay the same across attempts.
func TestDurableSkipsSentParts(t *testing.T) {
	ch := &fakeChannel{name: "tg", limit: 20}
	log := newMemLog()
	out := startDurable(t, DispatcherConfig{Delivery: log}, ch)
	log.queue("7", time.Now())
	_ = log.PartSent("7", 0, channels.MessageRef{ChatID: "c", MessageID: "old"})
	out <- bus.Outbound{Channel: "tg", ChatID: "c", Kind: bus.KindMessage, Content: "first part here\n\nsecond part here", ID: "7"}
	log.wait(t, 1)
	sent, _ := ch.snapshot()
	if len(sent) != 1 || sent[0].Content != "second part here" || sent[0].IdempotencyKey != "7.1" {
		t.Errorf("sent %+v, want only part 1 with key 7.1", sent)
	}
}

// A stream end replayed after a restart finishes the message an earlier
// attempt streamed, by editing it, instead of sending a second one.
func TestDurableStreamEndFinishesEarlierMessage(t *testing.T) {
	ch := editChannel{&fakeChannel{name: "tg", interval: time.Millisecond}}
	log := newMemLog()
	log.streams["turn9"] = channels.MessageRef{ChatID: "c", MessageID: "41"}
	log.queue("3", time.Now())
	out := startDurable(t, DispatcherConfig{Delivery: log}, ch)
	out <- bus.Outbound{Channel: "tg", ChatID: "c", Kind: bus.KindStreamEnd, StreamID: "s2", Turn: "turn9", Final: true, Content: "the whole answer", ID: "3"}
	if o := log.wait(t, 1)["3"]; o != OutcomeSent {
		t.Fatalf("outcome %s", o)
	}
	sent, edits := ch.snapshot()
	if len(sent) != 0 || len(edits) != 1 || edits[0].ref.MessageID != "41" || edits[0].text != "the whole answer" {
		t.Errorf("sent %+v, edits %+v: want one edit of message 41", sent, edits)
	}
}

// While the gateway cannot store messages, DeliverRetrying holds the
// message (past DeliverAttempts) and hands it over once it can.
func TestDeliverRetryingHoldsWhileUnavailable(t *testing.T) {
	var calls atomic.Int32
	in := channels.InboxFunc(func(context.Context, bus.Inbound) error {
		if calls.Add(1) <= 3*channels.DeliverAttempts {
			return fmt.Errorf("journal: %w", channels.ErrUnavailable)
		}
		return nil
	})
	if err := channels.DeliverRetrying(context.Background(), in, bus.Inbound{Channel: "tg"}, slog.New(slog.DiscardHandler), time.Microsecond, time.Millisecond); err != nil {
		t.Fatalf("message given up while the gateway could not store it: %v", err)
	}
	if n := calls.Load(); n != 3*channels.DeliverAttempts+1 {
		t.Errorf("%d attempts", n)
	}
}
