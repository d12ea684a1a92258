package channeltest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/relay"
)

// waitInbound waits until a message containing text was delivered (or,
// with denied, offered by a denied sender).
func (s *suite) waitInbound(t *testing.T, text string, denied bool) bus.Inbound {
	t.Helper()
	var got bus.Inbound
	waitFor(t, s.h.Timeout, fmt.Sprintf("inbound %q", text), func() bool {
		m, ok := s.inbox.find(text, denied)
		got = m
		return ok
	})
	return got
}

func checkInbound(t *testing.T, s *suite, group bool) {
	s.setup(t)
	s.start(t)
	text := "hello from alice, direct"
	if group {
		text = "hello from alice, in the group"
	}
	em := s.fx.Emit(Message{From: Alice, Group: group, Text: text})
	got := s.waitInbound(t, text, false)
	if got.Channel != s.fx.Channel.Name() {
		t.Errorf("Channel = %q, want %q", got.Channel, s.fx.Channel.Name())
	}
	if want := s.fx.SenderID(Alice); got.SenderID != want {
		t.Errorf("SenderID = %q, want %q", got.SenderID, want)
	}
	if got.ChatID != em.ChatID {
		t.Errorf("ChatID = %q, want %q", got.ChatID, em.ChatID)
	}
	if got.MessageID != em.MessageID {
		t.Errorf("MessageID = %q, want %q", got.MessageID, em.MessageID)
	}
	if got.IsGroup != group {
		t.Errorf("IsGroup = %v, want %v", got.IsGroup, group)
	}
	if got.ReceivedAt.IsZero() {
		t.Error("ReceivedAt is zero")
	}
	if s.fx.Acked != nil {
		waitFor(t, s.h.Timeout, "the platform to see the message acknowledged", func() bool { return s.fx.Acked(em) })
	}
	s.run.alive(t)
}

func checkInboundDirect(t *testing.T, s *suite) { checkInbound(t, s, false) }
func checkInboundGroup(t *testing.T, s *suite)  { checkInbound(t, s, true) }

func checkDeniedSender(t *testing.T, s *suite) {
	s.setup(t)
	s.start(t)
	bad := s.fx.Emit(Message{From: Mallory, Text: "let me in"})
	good := s.fx.Emit(Message{From: Alice, Text: "after the denied one"})
	denied := s.waitInbound(t, "let me in", true)
	if want := s.fx.SenderID(Mallory); denied.SenderID != want {
		t.Errorf("denied SenderID = %q, want %q", denied.SenderID, want)
	}
	s.waitInbound(t, "after the denied one", false)
	if _, ok := s.inbox.find("let me in", false); ok {
		t.Error("the denied message was delivered")
	}
	if s.fx.Acked != nil {
		waitFor(t, s.h.Timeout, "the denied message to be acknowledged", func() bool { return s.fx.Acked(bad) })
		waitFor(t, s.h.Timeout, "the allowed message to be acknowledged", func() bool { return s.fx.Acked(good) })
	}
	s.run.alive(t)
}

// ackWindow is how long the ack check watches for an early
// acknowledgement: a negative can only be checked over a window.
const ackWindow = 300 * time.Millisecond

func checkAckAfterDelivery(t *testing.T, s *suite) {
	s.setup(t)
	if s.fx.Acked == nil {
		t.Skip("the fixture cannot tell acknowledgements")
	}
	s.inbox.holdText, s.inbox.hold, s.inbox.entered = "hold this one", make(chan struct{}), make(chan struct{})
	entered := s.inbox.entered
	s.start(t)
	em := s.fx.Emit(Message{From: Alice, Text: "hold this one"})
	select {
	case <-entered:
	case <-time.After(s.h.Timeout):
		close(s.inbox.hold)
		t.Fatal("timed out waiting for Deliver")
	}
	deadline := time.Now().Add(ackWindow)
	for time.Now().Before(deadline) {
		if s.fx.Acked(em) {
			close(s.inbox.hold)
			t.Fatal("the platform saw the message acknowledged while Deliver had not returned")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(s.inbox.hold)
	waitFor(t, s.h.Timeout, "the message to be acknowledged after Deliver returned", func() bool { return s.fx.Acked(em) })
	s.waitInbound(t, "hold this one", false)
}

func checkReply(t *testing.T, s *suite) {
	s.setup(t)
	s.start(t)
	s.fx.Emit(Message{From: Alice, Text: "please answer"})
	in := s.waitInbound(t, "please answer", false)
	ref, err := s.fx.Channel.Send(s.ctx(t), bus.Outbound{
		Channel: in.Channel, ChatID: in.ChatID, Kind: bus.KindMessage, Content: "here is **the answer**",
		ReplyTo: in.MessageID, Metadata: in.Metadata, SessionKey: in.Key(), Final: true,
	})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if ref.MessageID == "" {
		t.Fatal("Send returned an empty MessageRef.MessageID")
	}
	sent := s.messages(in.ChatID, 0)
	if len(sent) != 1 {
		t.Fatalf("platform received %d messages in chat %s, want 1: %+v", len(sent), in.ChatID, sent)
	}
	if sent[0].MessageID != ref.MessageID {
		t.Errorf("MessageRef.MessageID = %q, platform message id %q", ref.MessageID, sent[0].MessageID)
	}
	if !strings.Contains(sent[0].Text, "here is") || !strings.Contains(sent[0].Text, "the answer") {
		t.Errorf("platform shows %q, want the reply text", sent[0].Text)
	}
}

// messages returns the new messages (not edits) sent to chat, from index
// from of Sent on.
func (s *suite) messages(chat string, from int) []Sent {
	all := s.fx.Sent()
	var out []Sent
	for _, m := range all[min(from, len(all)):] {
		if m.ChatID == chat && !m.Edit {
			out = append(out, m)
		}
	}
	return out
}

func messageLimit(ch channels.Channel) int {
	if l, ok := ch.(channels.Limiter); ok && l.MessageLimit() > 0 {
		return l.MessageLimit()
	}
	return relay.DefaultMessageLimit
}

// dispatcher runs a real Dispatcher over the channel until the check ends.
func (s *suite) dispatcher(t *testing.T) chan<- bus.Outbound {
	d := relay.NewDispatcher(relay.DispatcherConfig{MaxRetries: 3, RetryBase: 50 * time.Millisecond, Log: slog.New(s.logs)}, []channels.Channel{s.fx.Channel})
	out := make(chan bus.Outbound, 256)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.Run(ctx, out)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return out
}

func checkLongReplySplit(t *testing.T, s *suite) {
	s.setup(t)
	s.start(t)
	s.fx.Emit(Message{From: Alice, Text: "write a lot"})
	in := s.waitInbound(t, "write a lot", false)
	limit := messageLimit(s.fx.Channel)

	// Prose, then a code block longer than one message, then prose.
	var b strings.Builder
	var prose, code []string
	for i := 0; b.Len() < limit/2; i++ {
		line := fmt.Sprintf("Intro sentence number %d explains the code below.", i)
		prose = append(prose, line)
		b.WriteString(line + "\n")
	}
	b.WriteString("\n```go\n")
	for i := 0; b.Len() < limit*5/2; i++ {
		line := fmt.Sprintf("\tfmt.Println(\"code line %05d\")", i)
		code = append(code, line)
		b.WriteString(line + "\n")
	}
	b.WriteString("```\n\n")
	for i := 0; i < 5; i++ {
		line := fmt.Sprintf("Closing remark number %d.", i)
		prose = append(prose, line)
		b.WriteString(line + "\n")
	}
	text := b.String()

	mark := len(s.fx.Sent())
	out := s.dispatcher(t)
	out <- bus.Outbound{Channel: in.Channel, ChatID: in.ChatID, Kind: bus.KindMessage, Content: text, Metadata: in.Metadata, Final: true}
	last := prose[len(prose)-1]
	waitFor(t, s.h.Timeout*2, "the last part of the long reply", func() bool {
		for _, m := range s.messages(in.ChatID, mark) {
			if strings.Contains(m.Text, last) {
				return true
			}
		}
		return false
	})
	sent := s.messages(in.ChatID, mark)
	if len(sent) < 2 {
		t.Fatalf("a %d-character reply arrived in %d message(s), want it split (limit %d)", utf8.RuneCountInString(text), len(sent), limit)
	}
	seenCode := map[string]int{}
	var visible strings.Builder
	for i, m := range sent {
		if n := utf8.RuneCountInString(m.Text); n > limit {
			t.Errorf("message %d has %d characters, over the limit %d", i, n, limit)
		}
		inFence := false
		for line := range strings.SplitSeq(m.Text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inFence = !inFence
				continue
			}
			if strings.Contains(line, "fmt.Println(") {
				if !inFence {
					t.Errorf("message %d: code line %q outside a code block", i, line)
				}
				seenCode[strings.TrimSpace(line)]++
			}
		}
		if inFence {
			t.Errorf("message %d ends inside an open code block", i)
		}
		visible.WriteString(m.Text + "\n")
	}
	for _, line := range code {
		if n := seenCode[strings.TrimSpace(line)]; n != 1 {
			t.Errorf("code line %q arrived %d times, want once", line, n)
		}
	}
	for _, line := range prose {
		if !strings.Contains(visible.String(), line) {
			t.Errorf("prose line %q is missing", line)
		}
	}
}

func checkStreaming(t *testing.T, s *suite) {
	s.setup(t)
	s.start(t)
	s.fx.Emit(Message{From: Alice, Text: "stream to me"})
	in := s.waitInbound(t, "stream to me", false)
	mark := len(s.fx.Sent())
	out := s.dispatcher(t)

	ed, isEditor := channels.EditorOf(s.fx.Channel)
	interval := 50 * time.Millisecond
	if isEditor {
		interval = ed.EditInterval()
	}
	// Deltas for about three edit intervals, then the end of the stream.
	const parts = 12
	pace := interval * 3 / parts
	var full strings.Builder
	tick := time.NewTicker(max(pace, time.Millisecond))
	defer tick.Stop()
	for i := range parts {
		piece := fmt.Sprintf("word%02d ", i)
		full.WriteString(piece)
		out <- bus.Outbound{Channel: in.Channel, ChatID: in.ChatID, Kind: bus.KindDelta, Content: piece, StreamID: "s1", Metadata: in.Metadata}
		<-tick.C
	}
	want := strings.TrimSpace(full.String())
	out <- bus.Outbound{Channel: in.Channel, ChatID: in.ChatID, Kind: bus.KindStreamEnd, Content: full.String(), StreamID: "s1", Final: true, Metadata: in.Metadata, ReplyTo: in.MessageID}

	// shown is what each platform message displays now.
	shown := func() (map[string]string, []Sent) {
		view := map[string]string{}
		var seq []Sent
		for _, m := range s.fx.Sent()[mark:] {
			if m.ChatID != in.ChatID {
				continue
			}
			view[m.MessageID] = m.Text
			seq = append(seq, m)
		}
		return view, seq
	}
	waitFor(t, s.h.Timeout, "the streamed reply to show its full text", func() bool {
		view, _ := shown()
		for _, text := range view {
			if strings.TrimSpace(text) == want {
				return true
			}
		}
		return false
	})
	view, seq := shown()
	if len(view) != 1 {
		t.Fatalf("the stream became %d messages, want 1: %+v", len(view), seq)
	}
	if seq[0].Edit {
		t.Fatalf("the first platform call of the stream was an edit, want a new message")
	}
	if dr, ok := s.fx.Channel.(channels.Drafter); ok && isEditor && dr.DraftsTo(bus.Outbound{Channel: in.Channel, ChatID: in.ChatID, Metadata: in.Metadata}) {
		checkDrafted(t, s, in.ChatID, seq, interval)
		return
	}
	if !isEditor {
		if len(seq) != 1 {
			t.Errorf("a channel without edits got %d calls for one stream, want 1", len(seq))
		}
		return
	}
	if len(seq) < 2 {
		t.Fatalf("an Editor got no edit while streaming for %s (%d calls)", 3*interval, len(seq))
	}
	for i := 1; i < len(seq); i++ {
		if !seq[i].Edit || seq[i].MessageID != seq[0].MessageID {
			t.Errorf("call %d: %+v, want an edit of message %s", i, seq[i], seq[0].MessageID)
		}
	}
	// The edits respect EditInterval. Judged by their number over the time
	// they took, as the platform sees them, not gap by gap: a call held up
	// on its way (a loaded machine) shortens the gap to the next one
	// without the adapter having sent faster. Unthrottled, the 12 deltas
	// would give about 13 calls in 3 intervals; throttled, at most one per
	// interval plus the first message and the final edit.
	span := seq[len(seq)-1].At.Sub(seq[0].At)
	if most := int(span/interval) + 2; len(seq) > most {
		t.Errorf("%d calls in %s, more than the %d that EditInterval %s allows: %+v", len(seq), span, most, interval, seq)
	}
}

// checkDrafted checks a stream a Drafter drew as drafts: one message,
// sent once with the whole text and never edited, after drafts that grew
// no faster than the edit interval allows.
func checkDrafted(t *testing.T, s *suite, chat string, seq []Sent, interval time.Duration) {
	if len(seq) != 1 {
		t.Errorf("a drafted stream got %d platform calls, want one message: %+v", len(seq), seq)
	}
	if s.fx.Drafts == nil {
		return
	}
	drafts := s.fx.Drafts(chat)
	if len(drafts) == 0 {
		t.Fatalf("a drafted stream of %s showed no draft", 3*interval)
	}
	for i := 1; i < len(drafts); i++ {
		if !strings.HasPrefix(strings.TrimSpace(drafts[i].Text), strings.TrimSpace(drafts[i-1].Text)) {
			t.Errorf("draft %d %q does not continue %q", i, drafts[i].Text, drafts[i-1].Text)
		}
	}
	// Throttled like edits: at most one per interval over the time they
	// took, and the first one.
	span := drafts[len(drafts)-1].At.Sub(drafts[0].At)
	if most := int(span/interval) + 2; len(drafts) > most {
		t.Errorf("%d drafts in %s, more than the %d that EditInterval %s allows: %+v", len(drafts), span, most, interval, drafts)
	}
}

func checkDropConnection(t *testing.T, s *suite) {
	s.setup(t)
	if s.fx.Drop == nil {
		t.Skip("the fixture cannot drop connections")
	}
	s.start(t)
	s.fx.Emit(Message{From: Alice, Text: "before the drop"})
	s.waitInbound(t, "before the drop", false)
	s.fx.Drop()
	s.fx.Emit(Message{From: Alice, Text: "after the drop"})
	s.waitInbound(t, "after the drop", false)
	s.run.alive(t)
	if hr, ok := s.fx.Channel.(channels.HealthReporter); ok {
		waitFor(t, s.h.Timeout, "Health to be connected again", func() bool { return hr.Health().State == channels.StateConnected })
	}
}

func checkMalformed(t *testing.T, s *suite) {
	s.setup(t)
	if s.fx.EmitMalformed == nil {
		t.Skip("the fixture cannot emit malformed payloads")
	}
	s.start(t)
	s.fx.Emit(Message{From: Alice, Text: "before the garbage"})
	s.waitInbound(t, "before the garbage", false)
	warnings := s.logs.count(slog.LevelWarn)
	s.fx.EmitMalformed()
	s.fx.Emit(Message{From: Alice, Text: "after the garbage"})
	s.waitInbound(t, "after the garbage", false)
	s.run.alive(t)
	waitFor(t, s.h.Timeout, "a warning about the malformed payload", func() bool { return s.logs.count(slog.LevelWarn) > warnings })
	for _, m := range s.inbox.all() {
		if !strings.Contains(m.Content, "the garbage") {
			t.Errorf("unexpected inbound from the malformed payload: %+v", m)
		}
	}
}

func checkShutdown(t *testing.T, s *suite) {
	s.setup(t)
	// Goroutines of the fake (its listener) exist already; anything the
	// adapter starts from here on must be gone once Run returned.
	ignore := goleak.IgnoreCurrent()
	s.run = start(t, s.fx.Channel, s.inbox)
	s.fx.Emit(Message{From: Alice, Text: "one before stopping"})
	in := s.waitInbound(t, "one before stopping", false)
	if _, err := s.fx.Channel.Send(s.ctx(t), bus.Outbound{Channel: in.Channel, ChatID: in.ChatID, Kind: bus.KindMessage, Content: "bye", Metadata: in.Metadata, Final: true}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if took := s.run.stop(t); took > 5*time.Second {
		t.Errorf("Run took %s to return after cancel, want < 5 s", took)
	}
	// A fake's HTTP handler may still be finishing the long poll the
	// adapter cancelled (the server notices when the connection closes):
	// that goroutine is the fake's, not the adapter's. Adapters run no
	// HTTP server of their own (webhooks are the gateway's).
	goleak.VerifyNone(t, ignore, goleak.IgnoreAnyFunction("net/http.(*conn).serve"))
}
