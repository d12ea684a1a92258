package relay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// fakeChannel records sends and edits; failN makes the next N sends fail.
type fakeChannel struct {
	name     string
	interval time.Duration
	limit    int

	mu     sync.Mutex
	sent   []bus.Outbound
	edits  []editCall
	failN  int
	failAl bool
	nextID int
}

type editCall struct {
	ref  channels.MessageRef
	text string
	at   time.Time
}

func (f *fakeChannel) Name() string                                    { return f.name }
func (f *fakeChannel) Run(ctx context.Context, _ channels.Inbox) error { <-ctx.Done(); return nil }
func (f *fakeChannel) Send(_ context.Context, m bus.Outbound) (channels.MessageRef, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failAl || f.failN > 0 {
		f.failN--
		return channels.MessageRef{}, errors.New("platform down")
	}
	f.nextID++
	f.sent = append(f.sent, m)
	return channels.MessageRef{ChatID: m.ChatID, MessageID: fmt.Sprint(f.nextID)}, nil
}
func (f *fakeChannel) MessageLimit() int { return f.limit }

func (f *fakeChannel) snapshot() ([]bus.Outbound, []editCall) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]bus.Outbound(nil), f.sent...), append([]editCall(nil), f.edits...)
}

// editChannel adds editing.
type editChannel struct{ *fakeChannel }

func (e editChannel) Edit(_ context.Context, ref channels.MessageRef, m bus.Outbound) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.edits = append(e.edits, editCall{ref: ref, text: m.Content, at: time.Now()})
	return nil
}
func (e editChannel) EditInterval() time.Duration { return e.interval }

type countObserver struct {
	mu       sync.Mutex
	failures int
	attempts []int
}

func (o *countObserver) Sent(_ string, _ bus.Kind, attempts int, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		o.failures++
	}
	o.attempts = append(o.attempts, attempts)
}

func startDispatcher(t *testing.T, cfg DispatcherConfig, chans ...channels.Channel) chan bus.Outbound {
	t.Helper()
	out, _ := runDispatcher(t, cfg, chans...)
	return out
}

// runDispatcher is startDispatcher that also returns the dispatcher.
func runDispatcher(t *testing.T, cfg DispatcherConfig, chans ...channels.Channel) (chan bus.Outbound, *Dispatcher) {
	t.Helper()
	out := make(chan bus.Outbound, 100)
	d := NewDispatcher(cfg, chans)
	done := make(chan struct{})
	go func() { _ = d.Run(context.Background(), out); close(done) }()
	t.Cleanup(func() { close(out); <-done })
	return out, d
}

// workerCount is how many chats have a worker.
func (d *Dispatcher) workerCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.workers)
}

func TestStreamingBecomesRateLimitedEdits(t *testing.T) {
	fc := &fakeChannel{name: "tg", interval: 40 * time.Millisecond, limit: 4096}
	out := startDispatcher(t, DispatcherConfig{MaxRetries: 3, RetryBase: time.Millisecond}, editChannel{fc})
	words := strings.Fields("the quick brown fox jumps over the lazy dog and keeps running far away")
	full := ""
	for _, w := range words {
		out <- bus.Outbound{Channel: "tg", ChatID: "1", Kind: bus.KindDelta, StreamID: "s1", Content: w + " "}
		full += w + " "
		time.Sleep(5 * time.Millisecond) // deltas arrive faster than edits are allowed
	}
	full = strings.TrimSpace(full) + "\nDone."
	out <- bus.Outbound{Channel: "tg", ChatID: "1", Kind: bus.KindStreamEnd, StreamID: "s1", Content: full, Final: true}
	waitfor.True(t, "final edit", func() bool {
		_, e := fc.snapshot()
		return len(e) > 0 && e[len(e)-1].text == full
	})
	sent, edits := fc.snapshot()
	if len(sent) != 1 {
		t.Fatalf("want one message then edits, got %d sends", len(sent))
	}
	if len(edits) >= len(words) {
		t.Errorf("deltas not merged: %d edits for %d deltas", len(edits), len(words))
	}
	for i := 1; i < len(edits); i++ {
		if gap := edits[i].at.Sub(edits[i-1].at); gap < fc.interval-2*time.Millisecond {
			t.Errorf("edits %d and %d only %v apart, want >= %v", i-1, i, gap, fc.interval)
		}
		if edits[i].ref.MessageID != "1" {
			t.Errorf("edit targets %q", edits[i].ref.MessageID)
		}
	}
	if !strings.Contains(edits[len(edits)-1].text, "\nDone.") {
		t.Error("newline lost in the final edit")
	}
}

// finishChannel is an editor whose streamed messages must be finished.
type finishChannel struct {
	editChannel
	finished chan channels.MessageRef
}

func (f finishChannel) Finish(_ context.Context, ref channels.MessageRef) error {
	f.finished <- ref
	return nil
}

// A stream whose final text is already on screen needs no edit, but a
// Finisher is still told that the stream ended.
func TestFinisherToldWhenTheStreamEndsWithoutAnEdit(t *testing.T) {
	fc := &fakeChannel{name: "fs", interval: 20 * time.Millisecond, limit: 4096}
	ch := finishChannel{editChannel{fc}, make(chan channels.MessageRef, 4)}
	out := startDispatcher(t, DispatcherConfig{MaxRetries: 3, RetryBase: time.Millisecond}, ch)
	out <- bus.Outbound{Channel: "fs", ChatID: "1", Kind: bus.KindDelta, StreamID: "s1", Content: "all of it"}
	waitfor.True(t, "the first message", func() bool { s, _ := fc.snapshot(); return len(s) == 1 })
	out <- bus.Outbound{Channel: "fs", ChatID: "1", Kind: bus.KindStreamEnd, StreamID: "s1", Content: "all of it", Final: true}
	select {
	case ref := <-ch.finished:
		if ref.MessageID != "1" {
			t.Fatalf("finished %+v, want the streamed message", ref)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Finish never called")
	}
	if _, edits := fc.snapshot(); len(edits) != 0 {
		t.Fatalf("%d edits for a text already shown", len(edits))
	}
	select {
	case ref := <-ch.finished:
		t.Fatalf("finished twice: %+v", ref)
	default:
	}
}

func TestNonEditorGetsTheWholeReplyOnce(t *testing.T) {
	fc := &fakeChannel{name: "mail", limit: 4096}
	out := startDispatcher(t, DispatcherConfig{}, fc)
	for _, d := range []string{"a", "b", "c"} {
		out <- bus.Outbound{Channel: "mail", ChatID: "x", Kind: bus.KindDelta, StreamID: "s", Content: d}
	}
	out <- bus.Outbound{Channel: "mail", ChatID: "x", Kind: bus.KindStreamEnd, StreamID: "s", Content: "abc", Final: true}
	waitfor.True(t, "send", func() bool { s, _ := fc.snapshot(); return len(s) == 1 })
	s, _ := fc.snapshot()
	if s[0].Content != "abc" {
		t.Errorf("sent %q", s[0].Content)
	}
}

func TestProgressAndHintsSwitches(t *testing.T) {
	fc := &fakeChannel{name: "c", limit: 4096}
	out := startDispatcher(t, DispatcherConfig{SendProgress: false, SendToolHints: true}, fc)
	out <- bus.Outbound{Channel: "c", ChatID: "1", Kind: bus.KindStreamEnd, StreamID: "a", Content: "let me look"} // intermediate
	out <- bus.Outbound{Channel: "c", ChatID: "1", Kind: bus.KindToolHint, Content: "exec: ls"}
	out <- bus.Outbound{Channel: "c", ChatID: "1", Kind: bus.KindStreamEnd, StreamID: "b", Content: "answer", Final: true}
	waitfor.True(t, "two sends", func() bool { s, _ := fc.snapshot(); return len(s) == 2 })
	s, _ := fc.snapshot()
	if s[0].Content != "🔧 exec: ls" || s[1].Content != "answer" {
		t.Errorf("sent %q, %q", s[0].Content, s[1].Content)
	}
}

func TestProgressAndHintsPerChannel(t *testing.T) {
	on, off := true, false
	quiet := &fakeChannel{name: "quiet", limit: 4096}
	chatty := &fakeChannel{name: "chatty", limit: 4096}
	prefix := "> "
	out := startDispatcher(t, DispatcherConfig{SendProgress: true, SendToolHints: true, PerChannel: map[string]ProgressPolicy{
		"quiet":  {SendProgress: &off, SendToolHints: &off},
		"chatty": {SendToolHints: &on, ToolHintPrefix: &prefix},
	}}, quiet, chatty)
	for _, ch := range []string{"quiet", "chatty"} {
		out <- bus.Outbound{Channel: ch, ChatID: "1", Kind: bus.KindProgress, Content: "working"}
		out <- bus.Outbound{Channel: ch, ChatID: "1", Kind: bus.KindToolHint, Content: "exec: ls"}
		out <- bus.Outbound{Channel: ch, ChatID: "1", Kind: bus.KindStreamEnd, StreamID: "b", Content: "answer", Final: true}
	}
	waitfor.True(t, "chatty's three sends", func() bool { s, _ := chatty.snapshot(); return len(s) == 3 })
	waitfor.True(t, "quiet's final answer", func() bool { s, _ := quiet.snapshot(); return len(s) >= 1 })
	if s, _ := quiet.snapshot(); len(s) != 1 || s[0].Content != "answer" {
		t.Errorf("quiet channel got %d sends, want only the answer: %+v", len(s), s)
	}
	if s, _ := chatty.snapshot(); s[0].Content != "working" || s[1].Content != "> exec: ls" {
		t.Errorf("chatty channel got %q, %q; want the progress and the hint", s[0].Content, s[1].Content)
	}
}

func TestLongStreamContinuesInNewMessage(t *testing.T) {
	fc := &fakeChannel{name: "d", interval: time.Millisecond, limit: 100}
	out := startDispatcher(t, DispatcherConfig{}, editChannel{fc})
	var full strings.Builder
	full.WriteString("intro line\n```\n")
	for i := range 20 {
		fmt.Fprintf(&full, "code line %02d\n", i)
	}
	full.WriteString("```\nthe end")
	text := full.String()
	for i := 0; i < len(text); i += 7 {
		out <- bus.Outbound{Channel: "d", ChatID: "1", Kind: bus.KindDelta, StreamID: "s", Content: text[i:min(i+7, len(text))]}
	}
	out <- bus.Outbound{Channel: "d", ChatID: "1", Kind: bus.KindStreamEnd, StreamID: "s", Content: text, Final: true}
	waitfor.True(t, "the end shown", func() bool {
		s, e := fc.snapshot()
		return (len(e) > 0 && strings.HasSuffix(e[len(e)-1].text, "the end")) || (len(s) > 0 && strings.HasSuffix(s[len(s)-1].Content, "the end"))
	})
	sent, edits := fc.snapshot()
	// Reconstruct what each platform message finally shows.
	final := map[string]string{}
	for i, m := range sent {
		final[fmt.Sprint(i+1)] = m.Content
	}
	for _, e := range edits {
		final[e.ref.MessageID] = e.text
	}
	if len(final) < 2 {
		t.Fatalf("want the reply split over several messages, got %d", len(final))
	}
	lines := 0
	for id, txt := range final {
		if n := len([]rune(txt)); n > 100 {
			t.Errorf("message %s has %d characters, over the limit", id, n)
		}
		if strings.Count(txt, "```")%2 != 0 {
			t.Errorf("message %s has an unbalanced fence: %q", id, txt)
		}
		lines += strings.Count(txt, "code line")
	}
	if lines != 20 {
		t.Errorf("code lines shown: %d, want 20", lines)
	}
}

func TestRetriesThenGivesUp(t *testing.T) {
	fc := &fakeChannel{name: "r", limit: 4096, failN: 2}
	obs := &countObserver{}
	out := startDispatcher(t, DispatcherConfig{MaxRetries: 3, RetryBase: time.Millisecond, Observer: obs}, fc)
	out <- bus.Outbound{Channel: "r", ChatID: "1", Kind: bus.KindMessage, Content: "hello"}
	waitfor.True(t, "delivery after retries", func() bool { s, _ := fc.snapshot(); return len(s) == 1 })

	fc.mu.Lock()
	fc.failAl = true
	fc.mu.Unlock()
	out <- bus.Outbound{Channel: "r", ChatID: "1", Kind: bus.KindMessage, Content: "lost"}
	waitfor.True(t, "give up", func() bool { obs.mu.Lock(); defer obs.mu.Unlock(); return obs.failures == 1 })
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if want := []int{3, 4}; fmt.Sprint(obs.attempts) != fmt.Sprint(want) {
		t.Errorf("attempts %v, want %v (1 + 3 retries)", obs.attempts, want)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	ch := &retryAfterChannel{fakeChannel: &fakeChannel{name: "ra", limit: 4096}, after: 60 * time.Millisecond}
	out := startDispatcher(t, DispatcherConfig{MaxRetries: 2, RetryBase: time.Millisecond}, ch)
	start := time.Now()
	out <- bus.Outbound{Channel: "ra", ChatID: "1", Kind: bus.KindMessage, Content: "x"}
	waitfor.True(t, "send", func() bool { s, _ := ch.snapshot(); return len(s) == 1 })
	if el := time.Since(start); el < 60*time.Millisecond {
		t.Errorf("retried after %v, before the platform's retry-after of 60ms", el)
	}
}

type retryAfterChannel struct {
	*fakeChannel
	after time.Duration
	once  sync.Once
}

func (r *retryAfterChannel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	var err error
	r.once.Do(func() { err = &channels.RetryAfterError{After: r.after, Err: errors.New("429")} })
	if err != nil {
		return channels.MessageRef{}, err
	}
	return r.fakeChannel.Send(ctx, m)
}

func TestSlowChatDoesNotBlockOthers(t *testing.T) {
	slow := &blockingChannel{fakeChannel: &fakeChannel{name: "b", limit: 4096}, release: make(chan struct{})}
	out := startDispatcher(t, DispatcherConfig{}, slow)
	out <- bus.Outbound{Channel: "b", ChatID: "slow", Kind: bus.KindMessage, Content: "1"}
	out <- bus.Outbound{Channel: "b", ChatID: "fast", Kind: bus.KindMessage, Content: "2"}
	waitfor.True(t, "fast chat delivered while slow blocks", func() bool {
		s, _ := slow.snapshot()
		return len(s) == 1 && s[0].ChatID == "fast"
	})
	close(slow.release)
	waitfor.True(t, "slow delivered", func() bool { s, _ := slow.snapshot(); return len(s) == 2 })
}

type blockingChannel struct {
	*fakeChannel
	release chan struct{}
}

func (b *blockingChannel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	if m.ChatID == "slow" {
		<-b.release
	}
	return b.fakeChannel.Send(ctx, m)
}

func TestIdleChatWorkersRetire(t *testing.T) {
	fc := &fakeChannel{name: "c", limit: 4096}
	out, d := runDispatcher(t, DispatcherConfig{WorkerIdle: 20 * time.Millisecond}, fc)
	for i := range 50 {
		out <- bus.Outbound{Channel: "c", ChatID: fmt.Sprint(i), Kind: bus.KindMessage, Content: "hi", Final: true}
	}
	waitfor.True(t, "50 sends", func() bool { s, _ := fc.snapshot(); return len(s) == 50 })
	waitfor.True(t, "idle workers to retire", func() bool { return d.workerCount() == 0 })
	// A chat whose worker retired is served by a new one.
	out <- bus.Outbound{Channel: "c", ChatID: "7", Kind: bus.KindMessage, Content: "again", Final: true}
	waitfor.True(t, "send after retirement", func() bool { s, _ := fc.snapshot(); return len(s) == 51 && s[50].Content == "again" })
}

// While more chats than CrowdWorkers have a worker, idle ones retire
// after CrowdIdle instead of waiting out WorkerIdle (an hour here), down
// to the crowd's size; the chats are served again after.
func TestCrowdedWorkersRetireSooner(t *testing.T) {
	fc := &fakeChannel{name: "c", limit: 4096}
	out, d := runDispatcher(t, DispatcherConfig{WorkerIdle: time.Hour, CrowdWorkers: 5, CrowdIdle: 10 * time.Millisecond}, fc)
	for i := range 40 {
		out <- bus.Outbound{Channel: "c", ChatID: fmt.Sprint(i), Kind: bus.KindMessage, Content: "hi", Final: true}
	}
	waitfor.True(t, "40 sends", func() bool { s, _ := fc.snapshot(); return len(s) == 40 })
	waitfor.True(t, "the crowd of idle workers to shrink to 5", func() bool { return d.workerCount() <= 5 })
	out <- bus.Outbound{Channel: "c", ChatID: "3", Kind: bus.KindMessage, Content: "again", Final: true}
	waitfor.True(t, "send after retirement", func() bool { s, _ := fc.snapshot(); return len(s) == 41 && s[40].Content == "again" })
}

func TestWorkerRetirementLosesNothing(t *testing.T) {
	fc := &fakeChannel{name: "c", limit: 4096}
	out := make(chan bus.Outbound, 100)
	d := NewDispatcher(DispatcherConfig{WorkerIdle: 5 * time.Millisecond}, []channels.Channel{fc})
	done := make(chan struct{})
	go func() { _ = d.Run(context.Background(), out); close(done) }()
	t.Cleanup(func() { close(out); <-done })
	// Messages arrive around the idle deadline, so workers retire and are
	// recreated while messages are on their way.
	const n = 120
	for i := range n {
		out <- bus.Outbound{Channel: "c", ChatID: fmt.Sprint(i % 3), Kind: bus.KindMessage, Content: fmt.Sprint(i), Final: true}
		time.Sleep(time.Duration(i%11) * time.Millisecond)
	}
	waitfor.True(t, "every message", func() bool { s, _ := fc.snapshot(); return len(s) == n })
	s, _ := fc.snapshot()
	last := map[string]int{}
	for _, m := range s {
		var v int
		fmt.Sscan(m.Content, &v)
		if prev, ok := last[m.ChatID]; ok && v < prev {
			t.Fatalf("chat %s: %d after %d (order lost)", m.ChatID, v, prev)
		}
		last[m.ChatID] = v
	}
}

// A platform's retry-after is capped at RetryMax: an hour-long hint does
// not hold the chat for an hour.
func TestRetryAfterCapped(t *testing.T) {
	ch := &retryAfterChannel{fakeChannel: &fakeChannel{name: "ra", limit: 4096}, after: time.Hour}
	out := startDispatcher(t, DispatcherConfig{MaxRetries: 2, RetryBase: time.Millisecond, RetryMax: 20 * time.Millisecond}, ch)
	out <- bus.Outbound{Channel: "ra", ChatID: "1", Kind: bus.KindMessage, Content: "x"}
	waitfor.True(t, "send after the capped wait", func() bool { s, _ := ch.snapshot(); return len(s) == 1 })
}

// In a cluster the JetStream stream holds a reply until Handled
// acknowledges it, so a platform that is down longer than MaxRetries must
// not make the dispatcher give up and acknowledge it: the reply is retried
// until MaxAge, like the outbox's, and acknowledged once sent (found by
// the chaos soak: a 12 s outage lost two replies). A typing indicator is
// still best-effort.
func TestHeldReplyOutlastsMaxRetries(t *testing.T) {
	fc := &fakeChannel{name: "tg", limit: 4096, failN: 6}
	var mu sync.Mutex
	var handled []bus.Outbound
	out := startDispatcher(t, DispatcherConfig{MaxRetries: 1, RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond,
		Handled: func(m bus.Outbound) { mu.Lock(); handled = append(handled, m); mu.Unlock() }}, fc)
	out <- bus.Outbound{ID: "out.1", Channel: "tg", ChatID: "1", Kind: bus.KindMessage, Content: "the answer", Final: true}
	waitfor.True(t, "the reply sent and acknowledged", func() bool {
		mu.Lock()
		defer mu.Unlock()
		s, _ := fc.snapshot()
		return len(s) == 1 && len(handled) == 1
	})
	if s, _ := fc.snapshot(); s[0].Content != "the answer" {
		t.Errorf("sent %q", s[0].Content)
	}
}

// TestSplitMessageKeepsButtonsOnTheLastPart: a message longer than the
// platform's limit is sent in parts; an approval's buttons go under the
// last part only (a person answers after reading it all), and the files
// with the first.
func TestSplitMessageKeepsButtonsOnTheLastPart(t *testing.T) {
	fc := &fakeChannel{name: "tg", limit: 60}
	out := startDispatcher(t, DispatcherConfig{MaxRetries: 3, RetryBase: time.Millisecond}, fc)
	long := strings.Repeat("This command wants to run and here is why it matters. ", 4)
	actions := []bus.Action{{Label: "Approve", Command: "/approve ab12"}, {Label: "Deny", Command: "/deny ab12"}}
	parts := len(Split(long, fc.limit))
	if parts < 3 {
		t.Fatalf("the message splits into %d parts; the test wants at least 3", parts)
	}
	out <- bus.Outbound{Channel: "tg", ChatID: "1", Content: long, Final: true, Actions: actions,
		Media: []bus.Media{{Path: "/tmp/plan.txt"}}}
	waitfor.True(t, "every part sent", func() bool {
		sent, _ := fc.snapshot()
		return len(sent) == parts
	})
	sent, _ := fc.snapshot()
	for i, m := range sent {
		last := i == len(sent)-1
		if got := len(m.Actions); last && got != 2 || !last && got != 0 {
			t.Errorf("part %d of %d has %d buttons", i+1, len(sent), got)
		}
		if got := len(m.Media); i == 0 && got != 1 || i > 0 && got != 0 {
			t.Errorf("part %d of %d has %d files", i+1, len(sent), got)
		}
	}
}

// TestWholeMessagesCarryNoStreamID: the text of a stream sent as whole
// messages (an intermediate text with progress on, an answer nothing was
// shown of) carries no stream id, so an adapter that opens a streaming
// card for a message with one (Feishu, WeCom) never opens one that nothing
// finishes.
func TestWholeMessagesCarryNoStreamID(t *testing.T) {
	fc := &fakeChannel{name: "c", limit: 4096}
	out := startDispatcher(t, DispatcherConfig{SendProgress: true}, fc)
	out <- bus.Outbound{Channel: "c", ChatID: "1", Kind: bus.KindStreamEnd, StreamID: "a", Content: "let me look"} // intermediate
	out <- bus.Outbound{Channel: "c", ChatID: "1", Kind: bus.KindStreamEnd, StreamID: "b", Content: "answer", Final: true}
	waitfor.True(t, "two sends", func() bool { s, _ := fc.snapshot(); return len(s) == 2 })
	s, _ := fc.snapshot()
	for _, m := range s {
		if m.StreamID != "" || m.Kind != bus.KindMessage {
			t.Errorf("%q sent with stream id %q, kind %v", m.Content, m.StreamID, m.Kind)
		}
	}
}

// brokenEditor sends but cannot edit (the platform refuses every edit).
type brokenEditor struct {
	*fakeChannel
	tried chan struct{}
}

func (b brokenEditor) Edit(context.Context, channels.MessageRef, bus.Outbound) error {
	select {
	case b.tried <- struct{}{}:
	default:
	}
	return errors.New("edit refused")
}
func (b brokenEditor) EditInterval() time.Duration { return b.interval }

// TestFailedEditResendsTheWholeMessage: when a streamed message cannot be
// edited any more, its text goes out again whole in a new message — the
// user reads the answer from its start, not a fragment that begins where
// the stuck message stopped (possibly mid-word).
func TestFailedEditResendsTheWholeMessage(t *testing.T) {
	fc := &fakeChannel{name: "tg", interval: 20 * time.Millisecond, limit: 4096}
	ch := brokenEditor{fakeChannel: fc, tried: make(chan struct{}, 1)}
	out := startDispatcher(t, DispatcherConfig{MaxRetries: 1, RetryBase: time.Millisecond}, ch)
	out <- bus.Outbound{Channel: "tg", ChatID: "1", Kind: bus.KindDelta, StreamID: "s1", Content: "The answer is a"}
	waitfor.True(t, "the first message", func() bool { s, _ := fc.snapshot(); return len(s) == 1 })
	out <- bus.Outbound{Channel: "tg", ChatID: "1", Kind: bus.KindDelta, StreamID: "s1", Content: "nswer to what"}
	<-ch.tried // the edit showing more was refused
	const full = "The answer is an answer to what you asked."
	out <- bus.Outbound{Channel: "tg", ChatID: "1", Kind: bus.KindStreamEnd, StreamID: "s1", Content: full, Final: true}
	waitfor.True(t, "the answer sent again", func() bool { s, _ := fc.snapshot(); return len(s) == 2 })
	sent, _ := fc.snapshot()
	if sent[0].Content != "The answer is a" || sent[1].Content != full {
		t.Errorf("sent %q then %q; want the stuck message, then the whole answer", sent[0].Content, sent[1].Content)
	}
}

// assemblerChannel is the API's kind of channel: its answer is made of the
// stream ends it is sent.
type assemblerChannel struct{ *fakeChannel }

func (assemblerChannel) AssemblesAnswers() {}

// The agent's words before a tool call reach an Assembler whole, with
// their stream's id, even with sendProgress off; a chat gets them only
// when sendProgress is on.
func TestAssemblerGetsEveryStreamEnd(t *testing.T) {
	api := &fakeChannel{name: "api", limit: 4096}
	chat := &fakeChannel{name: "chat", limit: 4096}
	out := startDispatcher(t, DispatcherConfig{MaxRetries: 1, RetryBase: time.Millisecond}, assemblerChannel{api}, chat)
	for _, name := range []string{"api", "chat"} {
		out <- bus.Outbound{Channel: name, ChatID: "c", Kind: bus.KindStreamEnd, StreamID: "s1", Content: "Let me look."}
		out <- bus.Outbound{Channel: name, ChatID: "c", Kind: bus.KindStreamEnd, StreamID: "s2", Content: "It is 12:00", Final: true}
	}
	finished := func(f *fakeChannel) bool {
		sent, _ := f.snapshot()
		return len(sent) > 0 && sent[len(sent)-1].Content == "It is 12:00"
	}
	waitfor.True(t, "both answers", func() bool { return finished(api) && finished(chat) })
	if sent, _ := api.snapshot(); len(sent) != 2 || sent[0].StreamID != "s1" || sent[0].Content != "Let me look." {
		t.Errorf("the API got %+v, want the words before the tool call with their stream id, then the answer", sent)
	}
	if sent, _ := chat.snapshot(); len(sent) != 1 {
		t.Errorf("a chat with sendProgress off got %+v, want only the answer", sent)
	}
}
