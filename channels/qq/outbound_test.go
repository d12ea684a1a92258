package qq

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/qq/qqtest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// Every reply to one message carries its msg_id and a new msg_seq; after
// the five passive replies QQ allows, the channel sends active messages.
func TestPassiveRepliesCountMsgSeq(t *testing.T) {
	fake := newFake(t)
	ch := newChannel(t, fake, nil, "", nil)
	in := &channeltest.Recorder{}
	run(t, ch, in)
	fake.Send(qqtest.Msg{Kind: qqtest.Group, From: aliceID, Chat: groupID, Content: " question"})
	m := in.Wait(t, "question")
	for i := range 6 {
		out := bus.Outbound{ChatID: m.ChatID, Content: "part " + string(rune('A'+i)), Metadata: m.Metadata}
		if i%2 == 0 {
			out.ReplyTo, out.Metadata = m.MessageID, nil
		}
		if _, err := ch.Send(t.Context(), out); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	sent := fake.Sent()
	if len(sent) != 6 {
		t.Fatalf("%d messages sent, want 6", len(sent))
	}
	for i, s := range sent {
		if s.Kind != "groups" || s.Target != groupID || s.MsgType != msgText {
			t.Errorf("message %d: %+v", i, s)
		}
		wantID, wantSeq := m.MessageID, i+1
		if i == 5 {
			wantID, wantSeq = "", 0 // passive replies used up
		}
		if s.MsgID != wantID || s.MsgSeq != wantSeq {
			t.Errorf("message %d: msg_id %q msg_seq %d, want %q %d", i, s.MsgID, s.MsgSeq, wantID, wantSeq)
		}
	}
}

// A gateway restarted after a reply counts msg_seq from 1 again; the
// platform refuses the repeat and the channel takes the next seq.
func TestRepeatedMsgSeqIsSkipped(t *testing.T) {
	fake := newFake(t)
	first := newChannel(t, fake, nil, "", nil)
	in := &channeltest.Recorder{}
	run(t, first, in)
	fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: aliceID, Content: "hello"})
	m := in.Wait(t, "hello")
	if _, err := first.Send(t.Context(), bus.Outbound{ChatID: m.ChatID, Content: "one", ReplyTo: m.MessageID}); err != nil {
		t.Fatal(err)
	}
	restarted := newChannel(t, fake, nil, "", nil)
	if _, err := restarted.Send(t.Context(), bus.Outbound{ChatID: m.ChatID, Content: "two", ReplyTo: m.MessageID}); err != nil {
		t.Fatalf("send after a restart: %v", err)
	}
	sent := fake.Sent()
	if len(sent) != 2 || sent[1].MsgSeq != 2 || sent[1].MsgID != m.MessageID || sent[1].Content != "two" {
		t.Fatalf("sent %+v, want the second reply with msg_seq 2", sent)
	}
}

func TestReplyWindow(t *testing.T) {
	r := newReplies()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return now }
	r.received("g1", groupPrefix+"G", now)
	r.received("c1", "U", now)
	now = now.Add(4 * time.Minute)
	if seq, ok := r.next("g1", groupPrefix+"G"); !ok || seq != 1 {
		t.Fatalf("group reply within 5 min: %d %v", seq, ok)
	}
	now = now.Add(2 * time.Minute)
	if _, ok := r.next("g1", groupPrefix+"G"); ok {
		t.Fatal("group reply after 6 min still passive, want active")
	}
	if seq, ok := r.next("c1", "U"); !ok || seq != 1 {
		t.Fatalf("single-chat reply after 6 min: %d %v, want passive (60 min window)", seq, ok)
	}
	now = now.Add(time.Hour)
	if _, ok := r.next("c1", "U"); ok {
		t.Fatal("single-chat reply after 66 min still passive")
	}
	if _, ok := r.next("", "U"); ok {
		t.Fatal("a message without msg_id is passive")
	}
}

func TestTokenRefreshedAfter401(t *testing.T) {
	fake := newFake(t)
	ch := newChannel(t, fake, nil, "", nil)
	if _, err := ch.Send(t.Context(), bus.Outbound{ChatID: aliceID, Content: "first"}); err != nil {
		t.Fatal(err)
	}
	old, _ := ch.tokens.Get(t.Context())
	fake.RevokeTokens()
	if _, err := ch.Send(t.Context(), bus.Outbound{ChatID: aliceID, Content: "after revoke"}); err != nil {
		t.Fatalf("send after the token was revoked: %v", err)
	}
	if tok, _ := ch.tokens.Get(t.Context()); tok == old {
		t.Error("the revoked token is still cached")
	}
	if n := len(fake.Sent()); n != 2 {
		t.Errorf("%d messages arrived, want 2", n)
	}
}

func TestSendErrorsAreClassified(t *testing.T) {
	fake := newFake(t)
	ch := newChannel(t, fake, nil, "", nil)
	fake.FailNext(1, 429, 22009)
	_, err := ch.Send(t.Context(), bus.Outbound{ChatID: aliceID, Content: "x"})
	var ra *channels.RetryAfterError
	if !errors.As(err, &ra) || ra.After != time.Second {
		t.Errorf("429: %v, want RetryAfterError 1s", err)
	}
	fake.FailNext(1, 400, 40034003)
	_, err = ch.Send(t.Context(), bus.Outbound{ChatID: aliceID, Content: "x"})
	var pe *channels.PermanentError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "40034003") {
		t.Errorf("400: %v, want PermanentError with QQ's code", err)
	}
	fake.FailNext(1, 500, 500000)
	_, err = ch.Send(t.Context(), bus.Outbound{ChatID: aliceID, Content: "x"})
	if err == nil || errors.As(err, &pe) || errors.As(err, &ra) {
		t.Errorf("500: %v, want a retryable error", err)
	}
	for _, bad := range []string{"", "group:", "a/b", "dms:"} {
		if _, err := ch.Send(t.Context(), bus.Outbound{ChatID: bad, Content: "x"}); !errors.As(err, &pe) {
			t.Errorf("chat %q: %v, want PermanentError", bad, err)
		}
	}
	if _, err := ch.Send(t.Context(), bus.Outbound{ChatID: aliceID, Content: "  "}); !errors.As(err, &pe) {
		t.Errorf("empty text: %v, want PermanentError", err)
	}
}

func TestMarkdownFormat(t *testing.T) {
	fake := newFake(t)
	ch := newChannel(t, fake, nil, "", func(c *Config) { c.MsgFormat = FormatMarkdown })
	if _, err := ch.Send(t.Context(), bus.Outbound{ChatID: aliceID, Content: "**bold** and a table\n| a | b |\n|---|---|\n| 1 | 2 |"}); err != nil {
		t.Fatal(err)
	}
	plain := newChannel(t, fake, nil, "", nil)
	if _, err := plain.Send(t.Context(), bus.Outbound{ChatID: aliceID, Content: "**bold** [site](https://example.com)"}); err != nil {
		t.Fatal(err)
	}
	sent := fake.Sent()
	if sent[0].MsgType != msgMarkdown || !strings.Contains(sent[0].Content, "**bold**") || !strings.Contains(sent[0].Content, "```\n| a | b |") {
		t.Errorf("markdown message %+v", sent[0])
	}
	if sent[1].MsgType != msgText || sent[1].Content != "bold site (https://example.com)" {
		t.Errorf("plain message %+v", sent[1])
	}
}

func TestGroupPolicyAndBots(t *testing.T) {
	for _, policy := range []channels.GroupPolicy{channels.GroupMention, channels.GroupOpen} {
		t.Run(string(policy), func(t *testing.T) {
			fake := newFake(t)
			ch := newChannel(t, fake, nil, "", func(c *Config) { c.GroupPolicy = policy })
			in := &channeltest.Recorder{}
			run(t, ch, in)
			fake.Send(qqtest.Msg{Kind: "GROUP_MESSAGE_CREATE", From: aliceID, Chat: groupID, Content: "chatter without a mention"})
			fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: "BOTOPENID", Bot: true, Content: "from a bot"})
			fake.Send(qqtest.Msg{Kind: qqtest.Group, From: aliceID, Chat: groupID, Content: " <@!bot-user-1> marker"})
			got := in.Wait(t, "marker")
			if got.Content != "marker" || !got.IsGroup || got.SenderID != aliceID || got.ChatID != groupPrefix+groupID {
				t.Errorf("group @-message: %+v", got)
			}
			chatter := false
			for _, m := range in.All() {
				if strings.Contains(m.Content, "from a bot") {
					t.Error("a bot's message was delivered")
				}
				chatter = chatter || strings.Contains(m.Content, "chatter")
			}
			if chatter != (policy == channels.GroupOpen) {
				t.Errorf("policy %s: GROUP_MESSAGE_CREATE delivered = %v", policy, chatter)
			}
		})
	}
}

func TestGuildDirectMessage(t *testing.T) {
	fake := newFake(t)
	ch := newChannel(t, fake, nil, "", nil)
	in := &channeltest.Recorder{}
	run(t, ch, in)
	fake.Send(qqtest.Msg{Kind: qqtest.Direct, From: "1234567", Chat: guildID, Content: "from a guild dm"})
	m := in.Wait(t, "from a guild dm")
	if m.ChatID != dmsPrefix+guildID || m.SenderID != "1234567" || m.IsGroup {
		t.Fatalf("guild dm: %+v", m)
	}
	if _, err := ch.Send(t.Context(), bus.Outbound{ChatID: m.ChatID, Content: "**answer**", ReplyTo: m.MessageID}); err != nil {
		t.Fatal(err)
	}
	s := fake.Sent()
	if len(s) != 1 || s[0].Kind != "dms" || s[0].Target != guildID || s[0].MsgID != m.MessageID || s[0].Content != "answer" {
		t.Fatalf("sent %+v", s)
	}
}

func TestAckMessage(t *testing.T) {
	fake := newFake(t)
	ch := newChannel(t, fake, nil, "", func(c *Config) { c.AckMessage = "收到，思考中…" })
	in := &channeltest.Recorder{Refuse: func(id string) bool { return id == malloryID }}
	run(t, ch, &denyInbox{in})
	fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: malloryID, Content: "stranger"})
	fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: aliceID, Content: "friend"})
	m := in.Wait(t, "friend")
	waitfor.True(t, "the ack message", func() bool { return len(fake.Sent()) > 0 })
	s := fake.Sent()
	if len(s) != 1 || s[0].Target != aliceID || s[0].Content != "收到，思考中…" || s[0].MsgID != m.MessageID || s[0].MsgSeq != 1 {
		t.Fatalf("sent %+v, want one ack to alice only", s)
	}
}

// denyInbox refuses what its Recorder would not admit, as the gate does.
type denyInbox struct{ *channeltest.Recorder }

func (d *denyInbox) Deliver(ctx context.Context, m bus.Inbound) error {
	if !d.Admits("qq", m.SenderID) {
		return channels.ErrDenied
	}
	return d.Recorder.Deliver(ctx, m)
}

func TestMediaIn(t *testing.T) {
	fake := newFake(t)
	dir := t.TempDir()
	ch := newChannel(t, fake, nil, dir, func(c *Config) { c.MaxMediaBytes = 1000 })
	in := &channeltest.Recorder{Refuse: func(id string) bool { return id == malloryID }}
	run(t, ch, in)
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 100)...)
	fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: malloryID, Content: "stranger pic", Attachments: []qqtest.File{{Name: "m.png", ContentType: "image/png", Data: png}}})
	fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: aliceID, Content: "look", Attachments: []qqtest.File{
		{Name: "cat.png", ContentType: "image/png", Data: png},
		{Name: "huge.bin", ContentType: "application/octet-stream", Data: bytes.Repeat([]byte{1}, 2000)},
	}})
	m := in.Wait(t, "look")
	if len(m.Media) != 1 || !m.Media[0].IsImage() || m.Media[0].Path == "" {
		t.Fatalf("media %+v", m.Media)
	}
	data, err := os.ReadFile(m.Media[0].Path)
	if err != nil || !bytes.Equal(data, png) || filepath.Dir(m.Media[0].Path) != filepath.Join(dir, "qq") {
		t.Fatalf("saved %s: %v", m.Media[0].Path, err)
	}
	if !strings.Contains(m.Content, "huge.bin: too large") {
		t.Errorf("content %q, want a note about the oversized file", m.Content)
	}
	stranger := in.Wait(t, "stranger pic")
	if len(stranger.Media) != 0 || !strings.Contains(stranger.Content, "not downloaded") {
		t.Errorf("a refused sender's file: %+v", stranger)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "qq"))
	if len(entries) != 1 {
		t.Errorf("%d files in the media folder, want only alice's", len(entries))
	}
}

func TestSendMedia(t *testing.T) {
	fake := newFake(t)
	ch := newChannel(t, fake, nil, "", nil)
	in := &channeltest.Recorder{}
	run(t, ch, in)
	fake.Send(qqtest.Msg{Kind: qqtest.Group, From: aliceID, Chat: groupID, Content: " draw"})
	m := in.Wait(t, "draw")
	file := filepath.Join(t.TempDir(), "chart.png")
	png := []byte("\x89PNG\r\n\x1a\nchart")
	if err := os.WriteFile(file, png, 0o600); err != nil {
		t.Fatal(err)
	}
	ref, err := ch.SendMedia(t.Context(), bus.Outbound{ChatID: m.ChatID, Content: "here it is", ReplyTo: m.MessageID,
		Media: []bus.Media{{Path: file, MIMEType: "image/png"}, {URL: "https://example.com/clip.mp4"}}})
	if err != nil {
		t.Fatal(err)
	}
	ups := fake.Uploads()
	if len(ups) != 2 || ups[0].Kind != "groups" || ups[0].FileType != 1 || !bytes.Equal(ups[0].Data, png) ||
		ups[1].FileType != 2 || ups[1].URL != "https://example.com/clip.mp4" {
		t.Fatalf("uploads %+v", ups)
	}
	sent := fake.Sent()
	if len(sent) != 3 || sent[0].Content != "here it is" || ref.MessageID != sent[0].ID {
		t.Fatalf("sent %+v ref %+v", sent, ref)
	}
	for i, s := range sent[1:] {
		if s.MsgType != msgMedia || s.FileInfo != ups[i].FileInfo || s.MsgID != m.MessageID || s.MsgSeq != i+2 {
			t.Errorf("media message %d: %+v", i, s)
		}
	}
	var pe *channels.PermanentError
	if _, err := ch.SendMedia(t.Context(), bus.Outbound{ChatID: m.ChatID, Media: []bus.Media{{Path: filepath.Join(t.TempDir(), "missing.png")}}}); !errors.As(err, &pe) {
		t.Errorf("missing file: %v, want PermanentError", err)
	}
}

// A message that answers nothing in particular (a pairing code, a cron
// job's output) goes out as a passive reply to the chat's last message.
func TestUnrelatedMessageRepliesToLastMessage(t *testing.T) {
	fake := newFake(t)
	ch := newChannel(t, fake, nil, "", nil)
	in := &channeltest.Recorder{}
	run(t, ch, in)
	fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: aliceID, Content: "older"})
	fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: aliceID, Content: "newer"})
	m := in.Wait(t, "newer")
	if _, err := ch.Send(t.Context(), bus.Outbound{ChatID: aliceID, Content: "reminder from cron"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Send(t.Context(), bus.Outbound{ChatID: "OTHERUSER", Content: "to a chat with no messages"}); err != nil {
		t.Fatal(err)
	}
	s := fake.Sent()
	if len(s) != 2 || s[0].MsgID != m.MessageID || s[0].MsgSeq != 1 || s[1].MsgID != "" {
		t.Fatalf("sent %+v, want a passive reply to %s and an active message", s, m.MessageID)
	}
}
