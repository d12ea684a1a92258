package feishu

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/feishu/feishutest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

func TestReassemble(t *testing.T) {
	ch := newChannel(t, feishutest.New(t), nil, "", nil)
	s := &wsSession{c: ch, parts: map[string]*partial{}}
	mk := func(id string, sum, seq int, p string) *Frame {
		return &Frame{Method: MethodData, Headers: []Header{{HeaderType, TypeEvent}, {HeaderMessageID, id}, {HeaderSum, itoa(sum)}, {HeaderSeq, itoa(seq)}}, Payload: []byte(p)}
	}
	if f := s.reassemble(mk("whole", 1, 0, "abc")); f == nil || string(f.Payload) != "abc" {
		t.Fatalf("unsplit frame: %+v", f)
	}
	// Two messages interleaved, parts out of order.
	steps := []struct {
		f    *Frame
		want string // "" = not complete yet
	}{
		{mk("a", 3, 2, "C"), ""},
		{mk("b", 2, 1, "y"), ""},
		{mk("a", 3, 0, "A"), ""},
		{mk("b", 2, 0, "x"), "xy"},
		{mk("a", 3, 1, "B"), "ABC"},
	}
	for i, st := range steps {
		got := s.reassemble(st.f)
		switch {
		case st.want == "" && got != nil:
			t.Errorf("step %d: complete too early: %q", i, got.Payload)
		case st.want != "" && (got == nil || string(got.Payload) != st.want):
			t.Errorf("step %d: got %v, want %q", i, got, st.want)
		}
	}
	if len(s.parts) != 0 {
		t.Errorf("%d partial payloads left over", len(s.parts))
	}
	// Invalid splits are dropped, not kept.
	for _, f := range []*Frame{mk("c", 2, 2, "x"), mk("c", 2, -1, "x"), mk("", 2, 0, "x"), mk("c", maxParts+1, 0, "x")} {
		if got := s.reassemble(f); got != nil {
			t.Errorf("invalid split %+v accepted", f.Headers)
		}
	}
	// A part whose sibling never comes expires.
	ch.fragmentTTL = time.Millisecond
	s.reassemble(mk("d", 2, 0, "x"))
	time.Sleep(5 * time.Millisecond)
	s.reassemble(mk("e", 2, 0, "x"))
	if _, ok := s.parts["d"]; ok {
		t.Error("an expired partial payload was kept")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestSplitEventAcknowledgedOnce: an event split across three frames
// (sent last part first) arrives once, whole, and is acknowledged.
func TestSplitEventAcknowledgedOnce(t *testing.T) {
	fake := feishutest.New(t)
	noViolations(t, fake)
	ch := newChannel(t, fake, nil, "", nil)
	rec := &channeltest.Recorder{}
	running(t, ch, rec)
	long := strings.Repeat("长消息 ", 400) + "end"
	p := fake.Push(feishutest.Message{From: aliceID, Text: long, Split: 3})
	got := rec.Wait(t, "end")
	if got.Content != strings.TrimSpace(long) {
		t.Errorf("content has %d bytes, want %d", len(got.Content), len(strings.TrimSpace(long)))
	}
	waitfor.True(t, "the ack", func() bool { return fake.Acked(p.FrameID) })
	fake.Push(feishutest.Message{From: aliceID, Text: "next"})
	rec.Wait(t, "next")
	if n := len(rec.All()); n != 2 {
		t.Errorf("%d deliveries, want 2", n)
	}
}

func mentionBot() []feishutest.Mention {
	return []feishutest.Mention{{Key: "@_user_1", OpenID: feishutest.BotOpenID, Name: feishutest.BotName}}
}

func TestGroupPolicy(t *testing.T) {
	for _, policy := range []channels.GroupPolicy{channels.GroupMention, channels.GroupOpen} {
		t.Run(string(policy), func(t *testing.T) {
			fake := feishutest.New(t)
			noViolations(t, fake)
			ch := newChannel(t, fake, nil, "", func(c *Config) { c.GroupPolicy = policy })
			rec := &channeltest.Recorder{}
			running(t, ch, rec)
			other := []feishutest.Mention{{Key: "@_user_1", OpenID: "ou_bob", Name: "Bob"}}
			unaddressed := fake.Push(feishutest.Message{From: aliceID, ChatID: groupID, ChatType: "group", Text: "@_user_1 chatting with bob", Mentions: other})
			fake.Push(feishutest.Message{From: feishutest.BotOpenID, ChatID: groupID, ChatType: "group", Text: "the bot's own words"})
			fake.Push(feishutest.Message{From: "ou_otherapp", SenderType: "app", ChatID: groupID, ChatType: "group", Text: "another app speaking"})
			fake.Push(feishutest.Message{From: aliceID, ChatID: groupID, ChatType: "group", Text: "hey @_user_1 what time is it", Mentions: mentionBot()})
			got := rec.Wait(t, "what time")
			if got.Content != "hey what time is it" {
				t.Errorf("Content = %q: the bot's mention should be removed", got.Content)
			}
			if !got.IsGroup || got.ChatID != groupID || got.SenderID != aliceID {
				t.Errorf("inbound %+v", got)
			}
			waitfor.True(t, "the unaddressed message to be acknowledged", func() bool { return fake.Acked(unaddressed.FrameID) })
			var texts []string
			for _, m := range rec.All() {
				texts = append(texts, m.Content)
			}
			want := []string{"hey what time is it"}
			if policy == channels.GroupOpen {
				want = []string{"@Bob chatting with bob", "hey what time is it"}
			}
			if strings.Join(texts, "|") != strings.Join(want, "|") {
				t.Errorf("delivered %q, want %q", texts, want)
			}
		})
	}
}

func TestTopicIsolation(t *testing.T) {
	for _, isolate := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[isolate], func(t *testing.T) {
			fake := feishutest.New(t)
			noViolations(t, fake)
			ch := newChannel(t, fake, nil, "", func(c *Config) { c.TopicIsolation = isolate })
			rec := &channeltest.Recorder{}
			running(t, ch, rec)
			p := fake.Push(feishutest.Message{From: aliceID, ChatID: "oc_topics", ChatType: "topic_group", ThreadID: "omt_1", RootID: "om_root", Text: "@_user_1 in a topic", Mentions: mentionBot()})
			got := rec.Wait(t, "in a topic")
			wantKey := ""
			if isolate {
				wantKey = "feishu:oc_topics:omt_1"
			}
			if got.SessionKey != wantKey {
				t.Errorf("SessionKey = %q, want %q", got.SessionKey, wantKey)
			}
			ref, err := ch.Send(testCtx(t), outbound(got, "answer in the topic"))
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			sent := fake.Sent()
			if len(sent) != 1 || sent[0].MessageID != ref.MessageID || sent[0].ChatID != "oc_topics" {
				t.Fatalf("sent %+v", sent)
			}
			if isolate && (!sent[0].InThread || sent[0].ReplyTo != p.MessageID) {
				t.Errorf("isolated topic: reply %+v, want a reply in thread to %s", sent[0], p.MessageID)
			}
			if !isolate && sent[0].ReplyTo != "" {
				t.Errorf("without isolation the answer went as a reply: %+v", sent[0])
			}
		})
	}
}

func TestEncryptedEventAndVerificationToken(t *testing.T) {
	fake := feishutest.New(t)
	noViolations(t, fake)
	ch := newChannel(t, fake, nil, "", func(c *Config) { c.EncryptKey, c.VerificationToken = "my-encrypt-key", "vtoken-123" })
	rec := &channeltest.Recorder{}
	running(t, ch, rec)
	forged := fake.Push(feishutest.Message{From: aliceID, Text: "forged token", EncryptKey: "my-encrypt-key", Token: "wrong"})
	wrongKey := fake.Push(feishutest.Message{From: aliceID, Text: "wrong key", EncryptKey: "another-key", Token: "vtoken-123"})
	fake.Push(feishutest.Message{From: aliceID, Text: "secret hello", EncryptKey: "my-encrypt-key", Token: "vtoken-123"})
	rec.Wait(t, "secret hello")
	waitfor.True(t, "the rejected events to be acknowledged", func() bool { return fake.Acked(forged.FrameID) && fake.Acked(wrongKey.FrameID) })
	if n := len(rec.All()); n != 1 {
		t.Errorf("%d deliveries, want only the correctly encrypted one", n)
	}
}

func TestMediaInbound(t *testing.T) {
	fake := feishutest.New(t)
	noViolations(t, fake)
	dir := t.TempDir()
	ch := newChannel(t, fake, nil, dir, func(c *Config) { c.MaxMediaBytes = 1000 })
	rec := &channeltest.Recorder{Refuse: func(id string) bool { return id == malloryID }}
	running(t, ch, rec)
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 100)...)
	fake.AddResource("img_k1", png)
	fake.AddResource("file_big", make([]byte, 2000))
	fake.Push(feishutest.Message{From: malloryID, Type: "image", Content: `{"image_key":"img_k1"}`})
	fake.Push(feishutest.Message{From: aliceID, Type: "image", Content: `{"image_key":"img_k1"}`})
	fake.Push(feishutest.Message{From: aliceID, Type: "file", Content: `{"file_key":"file_big","file_name":"big.bin"}`})
	fake.Push(feishutest.Message{From: aliceID, Type: "post", Content: `{"title":"Trip","content":[[{"tag":"text","text":"see "},{"tag":"a","text":"map","href":"https://example.com/m"}],[{"tag":"img","image_key":"img_k1"}]]}`})
	waitfor.True(t, "four deliveries", func() bool { return len(rec.All()) == 4 })
	all := rec.All()
	if m := all[0]; len(m.Media) != 0 || !contains(m.Content, "not downloaded, sender not allowed") {
		t.Errorf("stranger's image: %+v", m)
	}
	m := all[1]
	if len(m.Media) != 1 || m.Media[0].MIMEType != "image/png" {
		t.Fatalf("image message: %+v", m)
	}
	data, err := os.ReadFile(m.Media[0].Path)
	if err != nil || string(data) != string(png) {
		t.Errorf("saved image: %v (%d bytes)", err, len(data))
	}
	if st, err := os.Stat(m.Media[0].Path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("saved image mode: %v %v", st, err)
	}
	if m := all[2]; len(m.Media) != 0 || !contains(m.Content, "too large") {
		t.Errorf("oversized file: %+v", m)
	}
	if m := all[3]; len(m.Media) != 1 || m.Content != "Trip\nsee [map](https://example.com/m)" {
		t.Errorf("post: %q with %d media", m.Content, len(m.Media))
	}
}

func TestReactionAfterDelivery(t *testing.T) {
	fake := feishutest.New(t)
	noViolations(t, fake)
	ch := newChannel(t, fake, nil, "", func(c *Config) { c.ReactEmoji = "OK" })
	rec := &channeltest.Recorder{}
	running(t, ch, rec)
	p := fake.Push(feishutest.Message{From: aliceID, Text: "react to me"})
	rec.Wait(t, "react to me")
	waitfor.True(t, "the reaction", func() bool { return len(fake.Reactions()) == 1 })
	if r := fake.Reactions()[0]; r.MessageID != p.MessageID || r.Emoji != "OK" {
		t.Errorf("reaction %+v", r)
	}
}

func TestPingAndReconnect(t *testing.T) {
	fake := feishutest.New(t)
	noViolations(t, fake)
	fake.PingInterval = 1
	fake.FailNextOpens(2) // "system busy" is retried
	ch := newChannel(t, fake, nil, "", nil)
	rec := &channeltest.Recorder{}
	running(t, ch, rec)
	waitfor.True(t, "two pings", func() bool { return fake.Pings() >= 2 })
	if got := ch.Health().State; got != "connected" {
		t.Errorf("Health = %s", got)
	}
	opens := fake.Opens()
	fake.Drop()
	waitfor.True(t, "a new connection", func() bool { return fake.Opens() > opens && fake.Connected() })
	fake.Push(feishutest.Message{From: aliceID, Text: "after reconnect"})
	rec.Wait(t, "after reconnect")
}
