package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
)

func TestForumTopicsAreSessions(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), nil)
	in := run(t, ch)
	mention := "@" + telegramtest.BotUsername + " "
	fake.Send(telegramtest.Msg{From: alice, Chat: forum, ThreadID: 42, Text: mention + "in topic 42"})
	fake.Send(telegramtest.Msg{From: alice, Chat: forum, ThreadID: 43, Text: mention + "in topic 43"})
	fake.Send(telegramtest.Msg{From: alice, Chat: group, Text: mention + "no topic"})
	t42, t43, plain := in.wait(t, "in topic 42"), in.wait(t, "in topic 43"), in.wait(t, "no topic")
	if want := "telegram:-100888:topic:42"; t42.SessionKey != want || t42.Key() != want {
		t.Errorf("topic 42 session = %q, want %q", t42.SessionKey, want)
	}
	if want := "telegram:-100888:topic:43"; t43.Key() != want {
		t.Errorf("topic 43 session = %q, want %q", t43.Key(), want)
	}
	if plain.Key() != "telegram:-100777" {
		t.Errorf("plain group session = %q, want telegram:-100777", plain.Key())
	}
	if t42.ThreadID != "42" {
		t.Errorf("topic 42 ThreadID = %q", t42.ThreadID)
	}
	// The reply goes back to the topic: the typed ThreadID is enough.
	if _, err := ch.Send(context.Background(), bus.Outbound{ChatID: t42.ChatID, Content: "answer", ThreadID: t42.ThreadID}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if err := ch.Typing(context.Background(), t42.ChatID, t42.Metadata); err != nil {
		t.Fatalf("Typing: %v", err)
	}
	sent := fake.Sent()
	if len(sent) != 1 || sent[0].ThreadID != 42 {
		t.Fatalf("sent %+v, want one message in thread 42", sent)
	}
	calls := fake.Calls("sendChatAction")
	if len(calls) != 1 || calls[0].Params["message_thread_id"] != "42" || calls[0].Params["action"] != "typing" {
		t.Errorf("sendChatAction calls %+v, want typing in thread 42", calls)
	}
	// A reply written before ThreadID existed finds the topic in its
	// metadata, also after JSON (a journal, NATS) and in the shape older
	// versions wrote (a number).
	var meta bus.Metadata
	raw, _ := json.Marshal(map[string]any{"message_thread_id": 43})
	_ = json.Unmarshal(raw, &meta)
	if _, err := ch.Send(context.Background(), bus.Outbound{ChatID: t43.ChatID, Content: "answer", Metadata: meta}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if got := fake.Sent()[1].ThreadID; got != 43 {
		t.Errorf("after a JSON round trip the reply went to thread %d, want 43", got)
	}
}

func TestGroupPolicy(t *testing.T) {
	bot := "@" + telegramtest.BotUsername
	type msg struct {
		m    telegramtest.Msg
		want string // content expected; "" = dropped
	}
	tests := []struct {
		policy channels.GroupPolicy
		allow  []string // groupAllowFrom
		msgs   []msg
	}{
		{channels.GroupMention, nil, []msg{
			{telegramtest.Msg{Text: "just chatting"}, ""},
			{telegramtest.Msg{Text: bot + " what time is it"}, "what time is it"},
			{telegramtest.Msg{Text: "hey " + bot + ", help"}, "hey @" + telegramtest.BotUsername + ", help"},
			{telegramtest.Msg{Text: "/new@" + telegramtest.BotUsername}, "/new"},
			{telegramtest.Msg{Text: "/new@other_bot"}, ""},
			{telegramtest.Msg{Text: "/status"}, "/status"},
			{telegramtest.Msg{Text: "@someone_else hi"}, ""},
			{telegramtest.Msg{Text: "a topic message", ThreadID: 7}, ""},
			{telegramtest.Msg{Text: "answering the bot", ReplyTo: 1}, "answering the bot"},
		}},
		{channels.GroupOpen, nil, []msg{
			{telegramtest.Msg{Text: "just chatting"}, "just chatting"},
			{telegramtest.Msg{Text: "/new@other_bot"}, ""},
		}},
		{channels.GroupAllowlist, []string{"-100777"}, []msg{
			{telegramtest.Msg{Text: "just chatting"}, "just chatting"},
			{telegramtest.Msg{Text: bot + " in a group not listed", ThreadID: 7}, ""},
			{telegramtest.Msg{Text: "/new@other_bot"}, ""},
		}},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy), func(t *testing.T) {
			fake := telegramtest.New(t)
			ch := newChannel(t, fake, nil, t.TempDir(), func(c *Config) { c.GroupPolicy, c.GroupAllowFrom = tt.policy, tt.allow })
			in := run(t, ch)
			// A message from the bot, for the reply case.
			if _, err := ch.Send(context.Background(), bus.Outbound{ChatID: "-100777", Content: "I am the bot"}); err != nil {
				t.Fatalf("Send: %v", err)
			}
			var want []string
			for _, m := range tt.msgs {
				m.m.From, m.m.Chat = alice, group
				if m.m.ThreadID != 0 {
					m.m.Chat = forum
				}
				fake.Send(m.m)
				if m.want != "" {
					want = append(want, m.want)
				}
			}
			// Updates are handled in order: once the sentinel is in, every
			// message before it was handled.
			fake.Send(telegramtest.Msg{From: alice, Chat: private(alice), Text: "sentinel"})
			in.wait(t, "sentinel")
			var got []string
			for _, m := range in.all() {
				if m.Content != "sentinel" {
					got = append(got, m.Content)
					if !m.IsGroup {
						t.Errorf("%q: IsGroup = false", m.Content)
					}
				}
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("delivered\n%q\nwant\n%q", got, want)
			}
		})
	}
}

func TestMediaDownload(t *testing.T) {
	fake := telegramtest.New(t)
	media := t.TempDir()
	ch := newChannel(t, fake, nil, media, func(c *Config) { c.MaxMediaBytes = 1000 })
	in := run(t, ch)

	small := fake.AddFile("s.jpg", []byte("small"), 0)
	large := fake.AddFile("l.jpg", []byte("the largest photo"), 0)
	fake.Send(telegramtest.Msg{From: alice, Chat: private(alice), Photo: []string{small, large}, Caption: "look at this"})
	photo := in.wait(t, "look at this")
	if len(photo.Media) != 1 {
		t.Fatalf("photo message has media %+v, want 1", photo.Media)
	}
	m := photo.Media[0]
	if m.MIMEType != "image/jpeg" || !m.IsImage() {
		t.Errorf("photo MIME = %q, want image/jpeg", m.MIMEType)
	}
	if data, err := os.ReadFile(m.Path); err != nil || string(data) != "the largest photo" {
		t.Errorf("photo file %s = %q, %v; want the largest size", m.Path, data, err)
	}
	if rel, err := filepath.Rel(filepath.Join(media, "telegram"), m.Path); err != nil || strings.HasPrefix(rel, "..") {
		t.Errorf("photo saved at %s, want under %s/telegram", m.Path, media)
	}

	doc := fake.AddFile("report.pdf", []byte("%PDF-1.4 tiny"), 0)
	fake.Send(telegramtest.Msg{From: alice, Chat: private(alice), Document: doc, FileName: "report.pdf", MIMEType: "application/pdf", Caption: "the report"})
	got := in.wait(t, "the report")
	if len(got.Media) != 1 || got.Media[0].MIMEType != "application/pdf" || got.Media[0].Name != "report.pdf" {
		t.Errorf("document media = %+v", got.Media)
	}
	if !strings.Contains(got.Content, got.Media[0].Path) {
		t.Errorf("content %q does not say where the file is", got.Content)
	}

	// Over the cap as Telegram reports it: not even fetched.
	big := fake.AddFile("big.zip", []byte("x"), 5000)
	fake.Send(telegramtest.Msg{From: alice, Chat: private(alice), Document: big, FileName: "big.zip", Caption: "big one"})
	got = in.wait(t, "big one")
	if len(got.Media) != 0 || !strings.Contains(got.Content, "too large") {
		t.Errorf("over-cap document: content %q media %+v, want a too-large note and no media", got.Content, got.Media)
	}
	// Reported small but bigger in fact: the download stops at the cap.
	liar := fake.AddFile("liar.bin", bytes.Repeat([]byte("y"), 5000), 10)
	fake.Send(telegramtest.Msg{From: alice, Chat: private(alice), Document: liar, FileName: "liar.bin", Caption: "sneaky"})
	got = in.wait(t, "sneaky")
	if len(got.Media) != 0 || !strings.Contains(got.Content, "too large") {
		t.Errorf("lying document: content %q media %+v, want a too-large note", got.Content, got.Media)
	}
	// A sender the gate will turn away: nothing is fetched for her.
	hers := fake.AddFile("h.jpg", []byte("hers"), 0)
	fake.Send(telegramtest.Msg{From: mallory, Chat: private(mallory), Photo: []string{hers}, Caption: "from a stranger"})
	got = in.wait(t, "from a stranger")
	if len(got.Media) != 0 || !strings.Contains(got.Content, "not downloaded") {
		t.Errorf("stranger's photo: content %q media %+v, want no download", got.Content, got.Media)
	}
	for _, c := range fake.Calls("getFile") {
		if c.Params["file_id"] == big {
			t.Error("getFile was called for a file over the cap")
		}
		if c.Params["file_id"] == hers {
			t.Error("getFile was called for a sender the gate does not admit")
		}
	}
}

// A voice note arrives as audio with a note naming the file; the agent
// transcribes it when transcription is configured.
func TestVoiceNoteArrivesAsAudio(t *testing.T) {
	fake := telegramtest.New(t)
	in := run(t, newChannel(t, fake, nil, t.TempDir(), nil))
	voice := fake.AddFile("voice.oga", []byte("OggS voice"), 0)
	fake.Send(telegramtest.Msg{From: alice, Chat: private(alice), Voice: voice})
	got := in.wait(t, "[voice message:")
	if len(got.Media) != 1 || got.Media[0].MIMEType != "audio/ogg" {
		t.Fatalf("voice media = %+v, want one audio/ogg", got.Media)
	}
	if !strings.Contains(got.Content, got.Media[0].Path) {
		t.Errorf("content %q does not name the file %s", got.Content, got.Media[0].Path)
	}
	if !got.Voice {
		t.Error("a voice note arrived without Inbound.Voice")
	}
	fake.Send(telegramtest.Msg{From: alice, Chat: private(alice), Text: "typed"})
	if typed := in.wait(t, "typed"); typed.Voice {
		t.Error("a typed message arrived with Inbound.Voice")
	}
}
