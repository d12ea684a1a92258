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

// draftChannel drafts streams to chats other than "group"; failDrafts
// makes every draft fail.
type draftChannel struct {
	editChannel
	refresh    time.Duration
	failDrafts bool

	dmu    sync.Mutex
	drafts []bus.Outbound
}

func newDraftChannel(interval, refresh time.Duration, limit int) *draftChannel {
	return &draftChannel{editChannel: editChannel{&fakeChannel{name: "d", interval: interval, limit: limit}}, refresh: refresh}
}

func (d *draftChannel) DraftsTo(m bus.Outbound) bool { return m.ChatID != "group" }
func (d *draftChannel) Draft(_ context.Context, m bus.Outbound) error {
	d.dmu.Lock()
	defer d.dmu.Unlock()
	if d.failDrafts {
		return errors.New("drafts are not available")
	}
	d.drafts = append(d.drafts, m)
	return nil
}
func (d *draftChannel) DraftRefresh() time.Duration { return d.refresh }

func (d *draftChannel) draftTexts() []string {
	d.dmu.Lock()
	defer d.dmu.Unlock()
	var out []string
	for _, m := range d.drafts {
		out = append(out, m.Content)
	}
	return out
}

var _ channels.Drafter = (*draftChannel)(nil)

func delta(chat, stream, text string) bus.Outbound {
	return bus.Outbound{Channel: "d", ChatID: chat, Kind: bus.KindDelta, StreamID: stream, Content: text}
}

func streamEnd(chat, stream, text string) bus.Outbound {
	return bus.Outbound{Channel: "d", ChatID: chat, Kind: bus.KindStreamEnd, StreamID: stream, Content: text, Final: true}
}

func TestDraftedStreamEndsAsOneMessage(t *testing.T) {
	dc := newDraftChannel(20*time.Millisecond, time.Minute, 4096)
	out := startDispatcher(t, DispatcherConfig{}, dc)
	words := []string{"One ", "two ", "three ", "four ", "five."}
	var full strings.Builder
	for _, w := range words {
		full.WriteString(w)
		out <- delta("1", "s", w)
		want := full.String()
		waitfor.True(t, "a draft of "+want, func() bool {
			d := dc.draftTexts()
			return len(d) > 0 && d[len(d)-1] == want
		})
	}
	out <- streamEnd("1", "s", full.String())
	waitfor.True(t, "the answer sent", func() bool { s, _ := dc.snapshot(); return len(s) == 1 })

	sent, edits := dc.snapshot()
	if sent[0].Content != full.String() || sent[0].StreamID != "" || sent[0].Kind != bus.KindMessage {
		t.Errorf("sent %+v, want the whole answer as a message without a stream id", sent[0])
	}
	if len(edits) != 0 {
		t.Errorf("a drafted stream was edited: %+v", edits)
	}
	drafts := dc.draftTexts()
	for i := 1; i < len(drafts); i++ {
		if !strings.HasPrefix(drafts[i], drafts[i-1]) || drafts[i] == drafts[i-1] {
			t.Errorf("draft %d %q does not grow from %q", i, drafts[i], drafts[i-1])
		}
	}
	dc.dmu.Lock()
	for _, d := range dc.drafts {
		if d.StreamID != "s" || d.ChatID != "1" {
			t.Errorf("draft %+v, want stream s in chat 1", d)
		}
	}
	dc.dmu.Unlock()
}

// Drafts follow the edit interval: a burst of deltas makes a few drafts,
// not one per delta.
func TestDraftsThrottled(t *testing.T) {
	const interval = 100 * time.Millisecond
	dc := newDraftChannel(interval, time.Minute, 4096)
	out := startDispatcher(t, DispatcherConfig{}, dc)
	start := time.Now()
	var full strings.Builder
	for i := range 30 {
		piece := fmt.Sprintf("w%02d ", i)
		full.WriteString(piece)
		out <- delta("1", "s", piece)
		time.Sleep(10 * time.Millisecond) // pacing the producer, not asserting
	}
	out <- streamEnd("1", "s", full.String())
	waitfor.True(t, "the answer sent", func() bool { s, _ := dc.snapshot(); return len(s) == 1 })
	took := time.Since(start)
	if most := int(took/interval) + 2; len(dc.draftTexts()) > most {
		t.Errorf("%d drafts in %s, more than the %d the edit interval allows", len(dc.draftTexts()), took, most)
	}
}

// A model that pauses keeps its draft: the same text is drawn again each
// DraftRefresh while the stream is open.
func TestDraftRefreshedWhileTheModelIsSlow(t *testing.T) {
	dc := newDraftChannel(10*time.Millisecond, 40*time.Millisecond, 4096)
	out := startDispatcher(t, DispatcherConfig{}, dc)
	out <- delta("1", "s", "Thinking about it")
	waitfor.True(t, "the draft drawn three times", func() bool { return len(dc.draftTexts()) >= 3 })
	for _, d := range dc.draftTexts() {
		if d != "Thinking about it" {
			t.Errorf("draft %q, want the unchanged text", d)
		}
	}
	out <- delta("1", "s", ", done.")
	waitfor.True(t, "the new text drafted", func() bool {
		d := dc.draftTexts()
		return d[len(d)-1] == "Thinking about it, done."
	})
	out <- streamEnd("1", "s", "Thinking about it, done.")
	waitfor.True(t, "the answer sent", func() bool { s, _ := dc.snapshot(); return len(s) == 1 })
}

// A stream cut off (/stop) is sent as far as it went: its draft vanishes.
func TestInterruptedDraftIsSent(t *testing.T) {
	dc := newDraftChannel(10*time.Millisecond, time.Minute, 4096)
	out := startDispatcher(t, DispatcherConfig{}, dc)
	out <- delta("1", "s", "The first half")
	waitfor.True(t, "the draft", func() bool { return len(dc.draftTexts()) > 0 })
	out <- bus.Outbound{Channel: "d", ChatID: "1", Kind: bus.KindStreamEnd, StreamID: "s", Content: "The first half", Interrupted: true}
	waitfor.True(t, "the text so far sent", func() bool { s, _ := dc.snapshot(); return len(s) == 1 })
	if s, _ := dc.snapshot(); s[0].Content != "The first half" {
		t.Errorf("sent %q", s[0].Content)
	}
}

// A stream cut off before its first draft was drawn is not sent: the user
// saw nothing of it.
func TestInterruptedBeforeTheFirstDraft(t *testing.T) {
	dc := newDraftChannel(time.Second, time.Minute, 4096) // the first draft waits 500 ms
	out := startDispatcher(t, DispatcherConfig{}, dc)
	out <- delta("1", "s", "never drawn")
	out <- bus.Outbound{Channel: "d", ChatID: "1", Kind: bus.KindStreamEnd, StreamID: "s", Content: "never drawn", Interrupted: true}
	out <- bus.Outbound{Channel: "d", ChatID: "1", Kind: bus.KindMessage, Content: "next"}
	waitfor.True(t, "the next message", func() bool { s, _ := dc.snapshot(); return len(s) == 1 })
	if s, _ := dc.snapshot(); s[0].Content != "next" {
		t.Errorf("sent %q, want the next message only", s[0].Content)
	}
	if d := dc.draftTexts(); len(d) != 0 {
		t.Errorf("drafts %q of a stream that ended before its first draft", d)
	}
}

func TestFailedDraftGoesOnAsEdits(t *testing.T) {
	dc := newDraftChannel(10*time.Millisecond, time.Minute, 4096)
	dc.failDrafts = true
	out := startDispatcher(t, DispatcherConfig{}, dc)
	out <- delta("1", "s", "Hello")
	waitfor.True(t, "the message", func() bool { s, _ := dc.snapshot(); return len(s) == 1 })
	out <- delta("1", "s", " world")
	out <- streamEnd("1", "s", "Hello world")
	waitfor.True(t, "the edit", func() bool {
		_, e := dc.snapshot()
		return len(e) > 0 && e[len(e)-1].text == "Hello world"
	})
	if s, _ := dc.snapshot(); len(s) != 1 || s[0].Content != "Hello" {
		t.Errorf("sent %+v, want the first text once, then edits", s)
	}
}

func TestStreamNotDraftedEdits(t *testing.T) {
	dc := newDraftChannel(10*time.Millisecond, time.Minute, 4096)
	out := startDispatcher(t, DispatcherConfig{}, dc)
	out <- delta("group", "s", "Hello")
	waitfor.True(t, "the message", func() bool { s, _ := dc.snapshot(); return len(s) == 1 })
	out <- delta("group", "s", " all")
	out <- streamEnd("group", "s", "Hello all")
	waitfor.True(t, "the edit", func() bool { _, e := dc.snapshot(); return len(e) > 0 && e[len(e)-1].text == "Hello all" })
	if n := len(dc.draftTexts()); n != 0 {
		t.Errorf("%d drafts in a chat DraftsTo refused", n)
	}
}

// A drafted answer over the limit is sent in pieces as it grows; no draft
// is over the limit, and the pieces together are the answer.
func TestLongDraftSentInPieces(t *testing.T) {
	dc := newDraftChannel(time.Millisecond, time.Minute, 100)
	out := startDispatcher(t, DispatcherConfig{}, dc)
	var full strings.Builder
	for i := range 30 {
		fmt.Fprintf(&full, "word%02d ", i)
	}
	text := strings.TrimSpace(full.String())
	for i := 0; i < len(text); i += 9 {
		out <- delta("1", "s", text[i:min(i+9, len(text))])
	}
	out <- streamEnd("1", "s", text)
	waitfor.True(t, "the end sent", func() bool {
		s, _ := dc.snapshot()
		return len(s) > 0 && strings.HasSuffix(s[len(s)-1].Content, "word29")
	})
	sent, _ := dc.snapshot()
	if len(sent) < 2 {
		t.Fatalf("sent %d messages, want the answer in pieces", len(sent))
	}
	var got []string
	for _, m := range sent {
		if n := len([]rune(m.Content)); n > 100 || m.StreamID != "" {
			t.Errorf("piece %q: %d characters, stream id %q", m.Content, n, m.StreamID)
		}
		got = append(got, m.Content)
	}
	if strings.Join(got, " ") != text {
		t.Errorf("pieces %q, want together %q", got, text)
	}
	for _, d := range dc.draftTexts() {
		if len([]rune(d)) > 100 {
			t.Errorf("draft of %d characters, over the limit", len([]rune(d)))
		}
	}
}

// On shutdown a drafted stream whose end did not come is sent as far as
// it went.
func TestShutdownSendsOpenDrafts(t *testing.T) {
	dc := newDraftChannel(10*time.Millisecond, time.Minute, 4096)
	out := make(chan bus.Outbound, 10)
	d := NewDispatcher(DispatcherConfig{}, []channels.Channel{dc})
	done := make(chan struct{})
	go func() { _ = d.Run(context.Background(), out); close(done) }()
	out <- delta("1", "s", "half an answer")
	waitfor.True(t, "the draft", func() bool { return len(dc.draftTexts()) > 0 })
	close(out)
	<-done
	if s, _ := dc.snapshot(); len(s) != 1 || s[0].Content != "half an answer" {
		t.Errorf("sent %+v, want the drafted text", s)
	}
}

// A drafted stream cut off by a shutdown leaves its text as a message the
// turn's next attempt (after the restart) goes on editing, as an edited
// stream's does: no second message for one answer.
func TestCutOffDraftIsContinuedAfterARestart(t *testing.T) {
	dc := newDraftChannel(10*time.Millisecond, time.Minute, 4096)
	log := newMemLog()
	out := startDurable(t, DispatcherConfig{Delivery: log}, dc)
	first := delta("1", "s1", "The answer so")
	first.Turn = "turn7"
	out <- first
	waitfor.True(t, "the draft", func() bool { return len(dc.draftTexts()) > 0 })
	log.queue("1", time.Now())
	out <- bus.Outbound{Channel: "d", ChatID: "1", Kind: bus.KindStreamEnd, StreamID: "s1", Turn: "turn7", Content: "The answer so", Interrupted: true, ID: "1"}
	log.wait(t, 1)
	ref, ok := log.StreamMessage("turn7")
	if sent, _ := dc.snapshot(); len(sent) != 1 || !ok || ref.MessageID != "1" {
		t.Fatalf("sent %+v, stream message %+v %v: want the text so far sent and recorded", sent, ref, ok)
	}

	// The next attempt of the turn (a new stream) edits that message.
	again := delta("1", "s2", "The answer so far, and the rest.")
	again.Turn = "turn7"
	out <- again
	log.queue("2", time.Now())
	out <- bus.Outbound{Channel: "d", ChatID: "1", Kind: bus.KindStreamEnd, StreamID: "s2", Turn: "turn7", Content: "The answer so far, and the rest.", Final: true, ID: "2"}
	log.wait(t, 1)
	sent, edits := dc.snapshot()
	if len(sent) != 1 || len(edits) == 0 || edits[len(edits)-1].text != "The answer so far, and the rest." || edits[len(edits)-1].ref.MessageID != "1" {
		t.Errorf("sent %+v, edits %+v: want message 1 edited to the whole answer", sent, edits)
	}
}
