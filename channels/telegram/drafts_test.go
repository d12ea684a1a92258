package telegram

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/gateway/relay"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// dispatch runs the real dispatcher over ch until the test ends.
func dispatch(t *testing.T, ch *Channel) chan<- bus.Outbound {
	t.Helper()
	d := relay.NewDispatcher(relay.DispatcherConfig{MaxRetries: 2, RetryBase: 10 * time.Millisecond}, []channels.Channel{ch})
	out := make(chan bus.Outbound, 64)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = d.Run(ctx, out) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return out
}

// logs is a log sink a test can read.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

// chatOf is the outbound address of a chat, with the chat type the
// inbound message carried.
func chatOf(c telegramtest.Chat) bus.Outbound {
	return bus.Outbound{Channel: "telegram", ChatID: strconv.FormatInt(c.ID, 10), Metadata: bus.Metadata{"chat_type": c.Type}}
}

// streamer writes one streamed answer to a chat through out.
type streamer struct {
	out  chan<- bus.Outbound
	to   bus.Outbound
	id   string
	text strings.Builder
}

func (s *streamer) delta(piece string) {
	s.text.WriteString(piece)
	m := s.to
	m.Kind, m.StreamID, m.Content = bus.KindDelta, s.id, piece
	s.out <- m
}

func (s *streamer) end(interrupted bool) {
	m := s.to
	m.Kind, m.StreamID, m.Content, m.Interrupted, m.Final = bus.KindStreamEnd, s.id, s.text.String(), interrupted, !interrupted
	s.out <- m
}

// drafted waits until the latest draft in chat shows want.
func drafted(t *testing.T, fake *telegramtest.Server, chat int64, want string) {
	t.Helper()
	waitfor.True(t, "a draft showing "+strconv.Quote(want), func() bool {
		d := fake.Drafts(chat)
		return len(d) > 0 && d[len(d)-1].Visible == want
	})
}

// A streamed answer in a private chat is a draft that grows under one
// draft id, then one message with the whole answer; nothing is edited.
func TestPrivateChatStreamsAsDrafts(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), nil)
	s := &streamer{out: dispatch(t, ch), to: chatOf(private(alice)), id: "answer-1"}
	for _, piece := range []string{"Here ", "is **the** ", "answer ", "in parts."} {
		s.delta(piece)
		drafted(t, fake, alice.ID, strings.ReplaceAll(s.text.String(), "**", ""))
	}
	s.end(false)
	waitfor.True(t, "the answer sent", func() bool { return len(fake.Sent()) == 1 })

	sent := fake.Sent()
	if sent[0].Method != "sendMessage" || sent[0].Edit || sent[0].Visible != "Here is the answer in parts." || sent[0].Text != "Here is <b>the</b> answer in parts." {
		t.Errorf("sent %+v, want one HTML message with the whole answer", sent[0])
	}
	drafts := fake.Drafts(alice.ID)
	if len(drafts) < 4 {
		t.Fatalf("%d drafts, want one per step", len(drafts))
	}
	for i, d := range drafts {
		if d.DraftID != drafts[0].DraftID {
			t.Errorf("draft %d has id %d, want the stream's one id %d", i, d.DraftID, drafts[0].DraftID)
		}
		if d.ParseMode != "HTML" || strings.TrimSpace(d.Visible) == "" {
			t.Errorf("draft %d: %+v, want HTML with text", i, d)
		}
		if i > 0 && (!strings.HasPrefix(d.Visible, drafts[i-1].Visible) || d.Visible == drafts[i-1].Visible) {
			t.Errorf("draft %d %q does not grow from %q", i, d.Visible, drafts[i-1].Visible)
		}
	}
	if n := len(fake.Drafts(group.ID)); n != 0 {
		t.Errorf("%d drafts elsewhere", n)
	}

	// The next answer is another draft.
	s2 := &streamer{out: s.out, to: s.to, id: "answer-2"}
	s2.delta("Second.")
	drafted(t, fake, alice.ID, "Second.")
	if d := fake.Drafts(alice.ID); d[len(d)-1].DraftID == drafts[0].DraftID {
		t.Errorf("the second answer drafts under the first one's id %d", drafts[0].DraftID)
	}
	s2.end(false)
	waitfor.True(t, "the second answer sent", func() bool { return len(fake.Sent()) == 2 })
}

// Groups keep the edit path: Telegram has no drafts there.
func TestGroupChatStreamsAsEdits(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), func(c *Config) {})
	s := &streamer{out: dispatch(t, ch), to: chatOf(group), id: "g1"}
	s.delta("Hello ")
	waitfor.True(t, "the first message", func() bool { return len(fake.Sent()) == 1 })
	s.delta("group.")
	s.end(false)
	waitfor.True(t, "the edit with the whole answer", func() bool {
		sent := fake.Sent()
		return len(sent) >= 2 && sent[len(sent)-1].Edit && sent[len(sent)-1].Visible == "Hello group."
	})
	if calls := fake.Calls("sendMessageDraft"); len(calls) != 0 {
		t.Errorf("%d drafts in a group", len(calls))
	}
}

// streamMode "edit" keeps private chats on edits too.
func TestStreamModeEdit(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), func(c *Config) { c.StreamMode = StreamEdit })
	s := &streamer{out: dispatch(t, ch), to: chatOf(private(alice)), id: "e1"}
	s.delta("Edited ")
	waitfor.True(t, "the first message", func() bool { return len(fake.Sent()) == 1 })
	s.delta("answer.")
	s.end(false)
	waitfor.True(t, "the edit", func() bool { sent := fake.Sent(); return sent[len(sent)-1].Visible == "Edited answer." })
	if calls := fake.Calls("sendMessageDraft"); len(calls) != 0 {
		t.Errorf("%d drafts with streamMode edit", len(calls))
	}
}

// A Bot API without drafts: the stream goes on as a message and edits,
// later streams are edited without trying drafts again, and the switch is
// logged once.
func TestDraftsRefusedFallBackToEdits(t *testing.T) {
	fake := telegramtest.New(t)
	fake.Refuse("sendMessageDraft", 404, "Not Found: method not found")
	var sink logs
	ch := newChannel(t, fake, slog.New(slog.NewTextHandler(&sink, nil)), t.TempDir(), nil)
	out := dispatch(t, ch)
	for i, text := range []string{"First answer.", "Second answer."} {
		s := &streamer{out: out, to: chatOf(private(alice)), id: "r" + strconv.Itoa(i)}
		s.delta(text[:6])
		waitfor.True(t, "the message of answer "+strconv.Itoa(i), func() bool { return len(fake.Sent()) == 2*i+1 })
		s.delta(text[6:])
		s.end(false)
		waitfor.True(t, "the edit of answer "+strconv.Itoa(i), func() bool {
			sent := fake.Sent()
			return len(sent) == 2*i+2 && sent[2*i+1].Edit && sent[2*i+1].Visible == text
		})
	}
	if n := len(fake.Calls("sendMessageDraft")); n != 1 {
		t.Errorf("sendMessageDraft called %d times, want once: drafts are off after the refusal", n)
	}
	if n := sink.count("message drafts are not available"); n != 1 {
		t.Errorf("the switch to edits logged %d times, want once", n)
	}
	if ch.DraftsTo(chatOf(private(alice))) {
		t.Error("DraftsTo still accepts private chats")
	}
}

// A stream cut off (/stop) ends as a message with what was said so far,
// as the edit path leaves it: never a draft alone, which vanishes.
func TestInterruptedDraftBecomesAMessage(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), nil)
	s := &streamer{out: dispatch(t, ch), to: chatOf(private(alice)), id: "i1"}
	s.delta("I was saying")
	drafted(t, fake, alice.ID, "I was saying")
	s.delta(" that")
	s.end(true)
	waitfor.True(t, "the text so far sent", func() bool { return len(fake.Sent()) == 1 })
	if got := fake.Sent()[0]; got.Edit || got.Visible != "I was saying that" {
		t.Errorf("sent %+v, want the text so far as a message", got)
	}
}

// A model that pauses keeps its draft: the same text is drawn again every
// DraftRefresh while the answer is open.
func TestSlowModelKeepsTheDraft(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), nil)
	ch.draftRefresh = 150 * time.Millisecond
	s := &streamer{out: dispatch(t, ch), to: chatOf(private(alice)), id: "slow"}
	s.delta("Let me think")
	waitfor.True(t, "the draft drawn three times", func() bool { return len(fake.Drafts(alice.ID)) >= 3 })
	drafts := fake.Drafts(alice.ID)
	for i, d := range drafts {
		if d.Visible != "Let me think" {
			t.Errorf("draft %d %q, want the unchanged text", i, d.Visible)
		}
		if i > 0 {
			if gap := d.At.Sub(drafts[i-1].At); gap < 100*time.Millisecond {
				t.Errorf("draft %d came %s after the one before, want about the 150 ms refresh", i, gap)
			}
		}
	}
	s.delta(" about it.")
	s.end(false)
	waitfor.True(t, "the answer sent", func() bool { return len(fake.Sent()) == 1 })
	if got := fake.Sent()[0].Visible; got != "Let me think about it." {
		t.Errorf("sent %q", got)
	}
}

// With streaming off nothing is drafted or edited: the answer is sent
// once, complete.
func TestStreamingOff(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), func(c *Config) { c.Streaming = false })
	s := &streamer{out: dispatch(t, ch), to: chatOf(private(alice)), id: "off"}
	s.delta("All ")
	s.delta("at once.")
	s.end(false)
	waitfor.True(t, "the answer", func() bool { return len(fake.Sent()) == 1 })
	if got := fake.Sent()[0]; got.Visible != "All at once." {
		t.Errorf("sent %+v", got)
	}
	if n := len(fake.Calls("sendMessageDraft")); n != 0 {
		t.Errorf("%d drafts with streaming off", n)
	}
}

func TestPrivateChat(t *testing.T) {
	for _, tt := range []struct {
		m    bus.Outbound
		want bool
	}{
		{bus.Outbound{ChatID: "1001", Metadata: bus.Metadata{"chat_type": "private"}}, true},
		{bus.Outbound{ChatID: "-100777", Metadata: bus.Metadata{"chat_type": "supergroup"}}, false},
		{bus.Outbound{ChatID: "1001"}, true}, // a scheduled message: no inbound metadata
		{bus.Outbound{ChatID: "-100777"}, false},
		{bus.Outbound{ChatID: "@news"}, false},
	} {
		if got := privateChat(tt.m); got != tt.want {
			t.Errorf("privateChat(%s %v) = %v, want %v", tt.m.ChatID, tt.m.Metadata, got, tt.want)
		}
	}
	if draftID("") == 0 || draftID("a") == draftID("b") {
		t.Errorf("draft ids: %d %d %d", draftID(""), draftID("a"), draftID("b"))
	}
}

// An answer over Telegram's 4096 characters: no draft is over the limit
// (Telegram would refuse it), the finished parts are sent as they fill up,
// and the messages together are the answer, none edited.
func TestLongAnswerDraftedInParts(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), nil)
	s := &streamer{out: dispatch(t, ch), to: chatOf(private(alice)), id: "long"}
	var words []string
	for i := range 1400 {
		words = append(words, "w"+strconv.Itoa(i))
	}
	text := strings.Join(words, " ") // about 7,600 characters
	for i := 0; i < len(text); i += 500 {
		s.delta(text[i:min(i+500, len(text))])
	}
	s.end(false)
	waitfor.True(t, "the whole answer sent", func() bool {
		sent := fake.Sent()
		return len(sent) > 0 && strings.HasSuffix(sent[len(sent)-1].Visible, "w1399")
	})
	var parts []string
	for _, m := range fake.Sent() {
		if m.Edit || len([]rune(m.Visible)) > telegramtest.MessageLimit {
			t.Errorf("message %d: edit %v, %d characters", m.MessageID, m.Edit, len([]rune(m.Visible)))
		}
		parts = append(parts, m.Visible)
	}
	if len(parts) < 2 || strings.Join(parts, " ") != text {
		t.Errorf("%d messages, want the answer in parts that together are it", len(parts))
	}
	for _, d := range fake.Drafts(alice.ID) {
		if len([]rune(d.Visible)) > telegramtest.MessageLimit {
			t.Errorf("a draft of %d characters", len([]rune(d.Visible)))
		}
	}
	if n := len(fake.Calls("sendMessageDraft")); n != len(fake.Drafts(alice.ID)) {
		t.Errorf("%d draft calls, %d accepted: Telegram refused some", n, len(fake.Drafts(alice.ID)))
	}
}
