package mattermost

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/mattermost/mattermosttest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

var (
	alice   = mattermosttest.User{ID: "aliceid0000000000000000001", Username: "alice"}
	mallory = mattermosttest.User{ID: "malloryid00000000000000002", Username: "mallory"}
)

const town = "townsquareid00000000000001" // a public channel

func dm(u mattermosttest.User) string { return "dm" + u.ID[:10] }

func mention() string { return "@" + mattermosttest.Bot.Username + " " }

// newChannel builds a channel against fake with short timings.
func newChannel(t *testing.T, fake *mattermosttest.Server, log *slog.Logger, edit func(*Config)) *Channel {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Enabled, cfg.AllowFrom = true, []string{"*"}
	cfg.URL, cfg.Token = fake.URL, mattermosttest.Token
	if edit != nil {
		edit(&cfg)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ch, err := New(cfg, channels.Deps{Log: log})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ch.editInterval = 250 * time.Millisecond
	ch.backoffMin, ch.backoffMax = 10*time.Millisecond, 100*time.Millisecond
	return ch
}

func TestConformance(t *testing.T) {
	channeltest.Run(t, channeltest.Harness{
		Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
			fake := mattermosttest.New(t)
			ch := newChannel(t, fake, env.Log, nil)
			users := map[string]mattermosttest.User{channeltest.Alice: alice, channeltest.Mallory: mallory}
			t.Cleanup(func() {
				if v := fake.Violations(); len(v) > 0 {
					t.Errorf("protocol violations: %v", v)
				}
			})
			return channeltest.Fixture{
				Channel:  ch,
				SenderID: func(user string) string { return users[user].ID + "|" + users[user].Username },
				Emit: func(m channeltest.Message) channeltest.Emitted {
					u := users[m.From]
					msg := mattermosttest.Msg{From: u, ChannelID: dm(u), ChannelType: "D", Message: m.Text}
					if m.Group {
						msg.ChannelID, msg.ChannelType = town, "O"
						msg.Message = mention() + m.Text
						msg.Mentions = []string{mattermosttest.Bot.ID}
					}
					id := fake.Post(msg)
					return channeltest.Emitted{ChatID: msg.ChannelID, MessageID: id}
				},
				EmitMalformed: func() {
					fake.PushEvent("posted", `{"channel_type":"D","post":"{\"id\": 42, not json"}`)
				},
				Drop: fake.Drop,
				Sent: func() []channeltest.Sent {
					var out []channeltest.Sent
					for _, s := range fake.Sent() {
						out = append(out, channeltest.Sent{ChatID: s.ChannelID, MessageID: s.PostID, Edit: s.Edit, Text: s.Message, At: s.At})
					}
					return out
				},
				// Acked stays nil: Mattermost has no per-event
				// acknowledgement.
			}
		},
	})
}

// inbox records what the channel delivers; it admits everyone but mallory.
type inbox struct {
	mu  sync.Mutex
	got []bus.Inbound
}

func (in *inbox) Deliver(_ context.Context, m bus.Inbound) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.got = append(in.got, m)
	return nil
}

func (in *inbox) Admits(_, senderID string) bool { return !strings.HasPrefix(senderID, mallory.ID) }

func (in *inbox) all() []bus.Inbound {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]bus.Inbound(nil), in.got...)
}

func (in *inbox) wait(t *testing.T, text string) bus.Inbound {
	t.Helper()
	var got bus.Inbound
	waitfor.True(t, "inbound "+text, func() bool {
		for _, m := range in.all() {
			if strings.Contains(m.Content, text) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// run starts ch, waits until it is connected, and stops it when the test ends.
func run(t *testing.T, ch *Channel) *inbox {
	t.Helper()
	in := &inbox{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, in) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Run did not return within 5 s")
		}
	})
	waitfor.True(t, "connected", func() bool { return ch.Health().State == channels.StateConnected })
	return in
}

// TestMentionPolicyAndThreads: in channels only posts that mention the bot
// pass (mention stripped); the bot's own, other bots' and system posts never
// do; a thread is its own session and is answered in the thread, and a
// top-level channel post starts one.
func TestMentionPolicyAndThreads(t *testing.T) {
	fake := mattermosttest.New(t)
	ch := newChannel(t, fake, nil, nil)
	in := run(t, ch)
	bot := mattermosttest.Bot
	fake.Post(mattermosttest.Msg{From: alice, ChannelID: town, ChannelType: "O", Message: "chatter not for the bot"})
	fake.Post(mattermosttest.Msg{From: bot, ChannelID: town, ChannelType: "O", Message: mention() + "my own post"})
	fake.Post(mattermosttest.Msg{From: mattermosttest.User{ID: "otherbot00000000000000000x", Username: "jira", Bot: true}, ChannelID: town, ChannelType: "O", Message: mention() + "from a bot"})
	fake.Post(mattermosttest.Msg{From: alice, ChannelID: town, ChannelType: "O", Message: mention() + "joined", Type: "system_join_channel"})
	top := fake.Post(mattermosttest.Msg{From: alice, ChannelID: town, ChannelType: "O", Message: "@NanoBot: what is up?"})
	fake.Post(mattermosttest.Msg{From: alice, ChannelID: town, ChannelType: "P", Message: "hey bot, look", Mentions: []string{bot.ID}})
	fake.Post(mattermosttest.Msg{From: alice, ChannelID: town, ChannelType: "O", Message: mention() + "in the thread", RootID: top})
	fake.Post(mattermosttest.Msg{From: alice, ChannelID: dm(alice), ChannelType: "D", Message: "a direct message"})

	got := in.wait(t, "what is up?")
	if got.Content != "what is up?" || !got.IsGroup || got.SenderID != alice.ID+"|alice" {
		t.Errorf("mention post: %+v, want the mention stripped, a group, id|username", got)
	}
	if got.Key() != "mattermost:"+town+":"+top || got.Metadata["root_id"] != top {
		t.Errorf("top-level post: key %q root %q, want a thread under it", got.Key(), got.Metadata["root_id"])
	}
	in.wait(t, "hey bot, look") // mentioned through data.mentions
	th := in.wait(t, "in the thread")
	if th.Key() != got.Key() {
		t.Errorf("thread reply key %q, want the thread's %q", th.Key(), got.Key())
	}
	d := in.wait(t, "a direct message")
	if d.IsGroup || d.Key() != "mattermost:"+dm(alice) || d.Metadata["root_id"] != "" {
		t.Errorf("DM: %+v key %q, want a direct chat with the default key", d, d.Key())
	}
	for _, m := range in.all() {
		for _, bad := range []string{"chatter", "my own post", "from a bot", "joined"} {
			if strings.Contains(m.Content, bad) {
				t.Errorf("delivered %q, want it skipped", m.Content)
			}
		}
	}
	if _, err := ch.Send(t.Context(), bus.Outbound{ChatID: th.ChatID, Content: "answer", Metadata: th.Metadata}); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Send(t.Context(), bus.Outbound{ChatID: d.ChatID, Content: "dm answer", Metadata: d.Metadata}); err != nil {
		t.Fatal(err)
	}
	s := fake.Sent()
	if len(s) != 2 || s[0].RootID != top || s[0].ChannelID != town || s[1].RootID != "" {
		t.Errorf("sent %+v, want the answer in the thread and the DM answer top-level", s)
	}
	// Once the bot answered in the thread, replies there need no mention;
	// elsewhere they still do.
	fake.Post(mattermosttest.Msg{From: alice, ChannelID: town, ChannelType: "O", Message: "other chatter"})
	fake.Post(mattermosttest.Msg{From: alice, ChannelID: town, ChannelType: "O", Message: "thanks, and one more thing", RootID: top})
	if m := in.wait(t, "one more thing"); m.Key() != got.Key() {
		t.Errorf("follow-up key %q, want the thread's %q", m.Key(), got.Key())
	}
	for _, m := range in.all() {
		if strings.Contains(m.Content, "other chatter") {
			t.Error("an unmentioned top-level post was delivered")
		}
	}
	if v := fake.Violations(); len(v) > 0 {
		t.Errorf("protocol violations: %v", v)
	}
}

// TestResumeAfterDrop: posts made while the socket is down arrive after
// the reconnect, which resumes the connection instead of starting anew.
func TestResumeAfterDrop(t *testing.T) {
	fake := mattermosttest.New(t)
	ch := newChannel(t, fake, nil, nil)
	in := run(t, ch)
	fake.Post(mattermosttest.Msg{From: alice, ChannelID: dm(alice), ChannelType: "D", Message: "one"})
	in.wait(t, "one")
	fake.Drop()
	fake.Post(mattermosttest.Msg{From: alice, ChannelID: dm(alice), ChannelType: "D", Message: "two"})
	fake.Post(mattermosttest.Msg{From: alice, ChannelID: dm(alice), ChannelType: "D", Message: "three"})
	in.wait(t, "three")
	if connects, resumes := fake.Counts(); connects != 2 || resumes != 1 {
		t.Errorf("connects %d resumes %d, want 2 and 1", connects, resumes)
	}
	var texts []string
	for _, m := range in.all() {
		texts = append(texts, m.Content)
	}
	if strings.Join(texts, ",") != "one,two,three" {
		t.Errorf("delivered %v, want one,two,three once each, in order", texts)
	}
}

// TestSilentDeathIsNoticed: a socket that stays open but answers nothing is
// given up after two ping intervals, and the channel reconnects.
func TestSilentDeathIsNoticed(t *testing.T) {
	fake := mattermosttest.New(t)
	ch := newChannel(t, fake, nil, nil)
	ch.pingEvery = 50 * time.Millisecond
	in := run(t, ch)
	fake.Mute()
	waitfor.True(t, "a second connection", func() bool { c, _ := fake.Counts(); return c >= 2 })
	fake.Post(mattermosttest.Msg{From: alice, ChannelID: dm(alice), ChannelType: "D", Message: "still there?"})
	in.wait(t, "still there?")
}

func TestTyping(t *testing.T) {
	fake := mattermosttest.New(t)
	ch := newChannel(t, fake, nil, nil)
	if err := ch.Typing(t.Context(), town, nil); err == nil {
		t.Error("Typing before Run succeeded; want an error (no socket)")
	}
	run(t, ch)
	if err := ch.Typing(t.Context(), town, bus.Metadata{"root_id": "p1"}); err != nil {
		t.Fatalf("Typing: %v", err)
	}
	waitfor.True(t, "the user_typing action", func() bool {
		ty := fake.Typings()
		return len(ty) == 1 && ty[0] == mattermosttest.Typing{ChannelID: town, ParentID: "p1"}
	})
}

// TestRejectedToken: a token the server refuses stops the channel for good
// with a reason free of the token.
func TestRejectedToken(t *testing.T) {
	fake := mattermosttest.New(t)
	ch := newChannel(t, fake, nil, func(c *Config) { c.Token = "not-the-token-xyz" })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := ch.Run(ctx, &inbox{})
	if !errors.Is(err, ErrUnauthorized) || !channels.IsFatal(err) {
		t.Fatalf("Run = %v, want ErrUnauthorized as a fatal error", err)
	}
	if h := ch.Health(); h.State != channels.StateFailed || strings.Contains(h.LastError, "not-the-token") {
		t.Errorf("Health = %+v, want failed without the token", h)
	}
}

func TestSendErrors(t *testing.T) {
	fake := mattermosttest.New(t)
	ch := newChannel(t, fake, nil, nil)
	fake.RateLimit(1)
	_, err := ch.Send(t.Context(), bus.Outbound{ChatID: town, Content: "hi"})
	var ra *channels.RetryAfterError
	if !errors.As(err, &ra) || ra.After != 2*time.Second {
		t.Errorf("429: err = %v, want RetryAfterError 2s", err)
	}
	for _, st := range []int{400, 403, 404} {
		fake.FailNext(st)
		_, err := ch.Send(t.Context(), bus.Outbound{ChatID: town, Content: "hi"})
		var pe *channels.PermanentError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "fake.failure") {
			t.Errorf("status %d: err = %v, want a PermanentError naming the server's error id", st, err)
		}
	}
	fake.FailNext(500)
	_, err = ch.Send(t.Context(), bus.Outbound{ChatID: town, Content: "hi"})
	var pe *channels.PermanentError
	if err == nil || errors.As(err, &pe) {
		t.Errorf("500: err = %v, want a retryable error", err)
	}
	ref, err := ch.Send(t.Context(), bus.Outbound{ChatID: town, Content: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Edit(t.Context(), ref, bus.Outbound{Content: "hi, edited"}); err != nil {
		t.Fatal(err)
	}
	if s := fake.Sent(); len(s) != 2 || !s[1].Edit || s[1].PostID != ref.MessageID || s[1].Message != "hi, edited" {
		t.Errorf("sent %+v, want a post and its patch", s)
	}
}

func TestAttachmentsIn(t *testing.T) {
	fake := mattermosttest.New(t)
	mediaDir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Enabled, cfg.AllowFrom = true, []string{"*"}
	cfg.URL, cfg.Token, cfg.MaxMediaBytes = fake.URL, mattermosttest.Token, 1000
	ch, err := New(cfg, channels.Deps{Paths: configs.Paths{Media: mediaDir}})
	if err != nil {
		t.Fatal(err)
	}
	in := run(t, ch)
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0}, 100)...)
	fake.Post(mattermosttest.Msg{From: alice, ChannelID: dm(alice), ChannelType: "D", Message: "what is this?", Files: []mattermosttest.File{
		{Name: "cat.png", MIMEType: "image/png", Data: png},
		{Name: "huge.bin", Data: bytes.Repeat([]byte("x"), 2000)},
	}})
	got := in.wait(t, "what is this?")
	if len(got.Media) != 1 || !got.Media[0].IsImage() || got.Media[0].Name != "cat.png" {
		t.Fatalf("media %+v, want the image", got.Media)
	}
	if data, err := os.ReadFile(got.Media[0].Path); err != nil || !bytes.Equal(data, png) || filepath.Dir(got.Media[0].Path) != filepath.Join(mediaDir, "mattermost") {
		t.Errorf("saved %s: %v", got.Media[0].Path, err)
	}
	if !strings.Contains(got.Content, "[attachment huge.bin: too large") {
		t.Errorf("content %q lacks the too-large note", got.Content)
	}
	before := fake.Downloads()
	fake.Post(mattermosttest.Msg{From: mallory, ChannelID: dm(mallory), ChannelType: "D", Message: "take my file", Files: []mattermosttest.File{{Name: "x.png", Data: png}}})
	got = in.wait(t, "take my file")
	if len(got.Media) != 0 || !strings.Contains(got.Content, "not downloaded") || fake.Downloads() != before {
		t.Errorf("stranger's attachment: media %+v content %q, %d downloads", got.Media, got.Content, fake.Downloads()-before)
	}
}

func TestSendMedia(t *testing.T) {
	fake := mattermosttest.New(t)
	ch := newChannel(t, fake, nil, func(c *Config) { c.MaxMediaBytes = 1000 })
	dir := t.TempDir()
	var media []bus.Media
	for i := range 12 {
		p := filepath.Join(dir, "f"+string(rune('a'+i))+".txt")
		if err := os.WriteFile(p, []byte{byte('a' + i)}, 0o600); err != nil {
			t.Fatal(err)
		}
		media = append(media, bus.Media{Path: p, MIMEType: "text/plain"})
	}
	media = append(media, bus.Media{URL: "https://example.com/report.pdf"})
	ref, err := ch.SendMedia(t.Context(), bus.Outbound{ChatID: town, Content: "your files", Media: media, Metadata: bus.Metadata{"root_id": ""}})
	if err != nil {
		t.Fatal(err)
	}
	sent := fake.Sent()
	if len(sent) != 2 || ref.MessageID != sent[0].PostID {
		t.Fatalf("sent %+v (ref %v), want 2 posts (10 files, then 2)", sent, ref)
	}
	if sent[0].Message != "your files\nhttps://example.com/report.pdf" || len(sent[0].FileIDs) != 10 || len(sent[1].FileIDs) != 2 {
		t.Errorf("posts %+v", sent)
	}
	if f, ok := fake.File(sent[1].FileIDs[1]); !ok || f.Name != "fl.txt" || string(f.Data) != "l" {
		t.Errorf("last file %+v", f)
	}
	big := filepath.Join(dir, "big.bin")
	os.WriteFile(big, bytes.Repeat([]byte("z"), 2000), 0o600)
	_, err = ch.SendMedia(t.Context(), bus.Outbound{ChatID: town, Media: []bus.Media{{Path: big}}})
	var pe *channels.PermanentError
	if !errors.As(err, &pe) {
		t.Errorf("oversized file: err %v, want a PermanentError", err)
	}
	if v := fake.Violations(); len(v) > 0 {
		t.Errorf("protocol violations: %v", v)
	}
}

func TestStripMention(t *testing.T) {
	for _, tt := range []struct {
		in, want  string
		addressed bool
	}{
		{"@nanobot hello", "hello", true},
		{"@NanoBot: hello", "hello", true},
		{"hello @nanobot.", "hello @nanobot.", true},
		{"hello @nanobot2", "hello @nanobot2", false},
		{"mail me at x@nanobot.org", "mail me at x@nanobot.org", false},
		{"no mention", "no mention", false},
	} {
		got, addressed := stripMention(tt.in, "nanobot")
		if got != tt.want || addressed != tt.addressed {
			t.Errorf("stripMention(%q) = %q, %v; want %q, %v", tt.in, got, addressed, tt.want, tt.addressed)
		}
	}
}

func TestConfig(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no url", func(c *Config) { c.URL = "" }, "url: required"},
		{"bad url", func(c *Config) { c.URL = "chat.example.com" }, "url:"},
		{"no token", func(c *Config) { c.Token = "" }, "token: required"},
		{"policy", func(c *Config) { c.GroupPolicy = "sometimes" }, "groupPolicy"},
		{"allowlist", func(c *Config) { c.GroupPolicy = channels.GroupAllowlist }, "groupAllowFrom"},
	} {
		c := DefaultConfig()
		c.URL, c.Token = "https://chat.example.com", "t"
		tt.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate = %v, want an error about %s", tt.name, err, tt.want)
		}
	}
}
