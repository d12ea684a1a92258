package matrix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/matrix/matrixtest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// inbox records deliveries and refuses the stranger (if any).
type inbox = channeltest.Recorder

func newInbox(stranger string) *inbox {
	return &channeltest.Recorder{Refuse: func(s string) bool { return stranger != "" && s == stranger }}
}

// run starts ch and stops it when the test ends; the error Run returned
// is sent on the channel (a test that reads it puts it back).
func run(t *testing.T, ch *Channel, in channels.Inbox) chan error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, in) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return")
		}
	})
	return done
}

// getEvent reads an event as u, polling: Dendrite's read side trails the
// send a little.
func getEvent(t *testing.T, u *matrixtest.User, room id.RoomID, eid id.EventID) *event.Event {
	t.Helper()
	var evt *event.Event
	waitfor.True(t, "event "+string(eid), func() bool {
		e, err := u.GetEvent(t.Context(), room, eid)
		evt = e
		return err == nil && e != nil
	})
	return evt
}

func text(body string) *event.MessageEventContent {
	return &event.MessageEventContent{MsgType: event.MsgText, Body: body}
}

func TestFreshStartSkipsBacklogAndJoinsInvites(t *testing.T) {
	s := homeserver(t)
	ctx := context.Background()
	w := newWorld(t, s)
	say(t, w.alice, w.dm["alice"], text("old news from before the bot"))
	// Invitations waiting for the bot: one from Alice (allowed), one from
	// a stranger.
	byAlice, err := w.alice.CreateRoom(ctx, &mautrix.ReqCreateRoom{Preset: "private_chat", Invite: []id.UserID{w.bot.ID}})
	if err != nil {
		t.Fatal(err)
	}
	stranger := s.Register(t, "stranger")
	byStranger, err := stranger.CreateRoom(ctx, &mautrix.ReqCreateRoom{Preset: "private_chat", Invite: []id.UserID{w.bot.ID}})
	if err != nil {
		t.Fatal(err)
	}
	in := newInbox(string(stranger.ID))
	ch := newChannel(t, s, w.bot, channels.Deps{Paths: configs.Paths{State: t.TempDir()}}, nil)
	run(t, ch, in)
	waitfor.True(t, "the bot to join Alice's room", func() bool {
		resp, err := w.alice.JoinedMembers(ctx, byAlice.RoomID)
		_, in := resp.Joined[w.bot.ID]
		return err == nil && in
	})
	say(t, w.alice, w.dm["alice"], text("new question"))
	in.Wait(t, "new question")
	say(t, w.alice, byAlice.RoomID, text("hello in the new room"))
	in.Wait(t, "hello in the new room")
	for _, m := range in.All() {
		if strings.Contains(m.Content, "old news") {
			t.Error("a message from before the bot's first start was delivered")
		}
	}
	if resp, err := stranger.JoinedMembers(ctx, byStranger.RoomID); err != nil || len(resp.Joined) != 1 {
		t.Errorf("the bot joined the stranger's room (%v)", err)
	}
}

func TestGroupPolicies(t *testing.T) {
	s := homeserver(t)
	w := newWorld(t, s)
	in := newInbox("")
	ch := newChannel(t, s, w.bot, channels.Deps{}, nil)
	run(t, ch, in)
	waitfor.True(t, "the channel to connect", func() bool { return ch.Health().State == channels.StateConnected })
	say(t, w.alice, w.group, text("just chatting, not for the bot"))
	say(t, w.alice, w.group, text("hey "+w.bot.ID.Localpart()+", what time is it?"))
	got := in.Wait(t, "what time is it?")
	if !got.IsGroup || got.ChatID != string(w.group) {
		t.Errorf("group message: %+v", got)
	}
	withMention := text("anyone?")
	withMention.Mentions = &event.Mentions{UserIDs: []id.UserID{w.bot.ID}}
	say(t, w.mallory, w.group, withMention)
	in.Wait(t, "anyone?")
	// A reply to the bot's own message counts as addressing it.
	ref, err := ch.Send(t.Context(), bus.Outbound{ChatID: string(w.group), Content: "I am here"})
	if err != nil {
		t.Fatal(err)
	}
	reply := text("thanks")
	reply.RelatesTo = &event.RelatesTo{InReplyTo: &event.InReplyTo{EventID: id.EventID(ref.MessageID)}}
	say(t, w.alice, w.group, reply)
	in.Wait(t, "thanks")
	for _, m := range in.All() {
		if strings.Contains(m.Content, "just chatting") {
			t.Error("a room message not addressed to the bot was delivered under groupPolicy mention")
		}
	}
	if got.Content != "hey "+w.bot.ID.Localpart()+", what time is it?" {
		t.Logf("content %q", got.Content)
	}
}

func TestThreadsAndFormatting(t *testing.T) {
	s := homeserver(t)
	w := newWorld(t, s)
	in := newInbox("")
	state := t.TempDir()
	w.seedSyncToken(t, state)
	ch := newChannel(t, s, w.bot, channels.Deps{Paths: configs.Paths{State: state}}, nil)
	run(t, ch, in)
	root := say(t, w.alice, w.dm["alice"], text("start of a thread"))
	inThread := text("a question in the thread")
	inThread.RelatesTo = &event.RelatesTo{Type: event.RelThread, EventID: root}
	say(t, w.alice, w.dm["alice"], inThread)
	got := in.Wait(t, "a question in the thread")
	if want := "matrix:" + string(w.dm["alice"]) + ":thread:" + string(root); got.SessionKey != want {
		t.Errorf("SessionKey = %q, want %q", got.SessionKey, want)
	}
	ref, err := ch.Send(t.Context(), bus.Outbound{ChatID: got.ChatID, Content: "**bold** and `code`", ReplyTo: got.MessageID, Metadata: got.Metadata})
	if err != nil {
		t.Fatal(err)
	}
	evt := getEvent(t, w.alice, w.dm["alice"], id.EventID(ref.MessageID))
	var c event.MessageEventContent
	if err := json.Unmarshal(evt.Content.VeryRaw, &c); err != nil {
		t.Fatal(err)
	}
	if c.Format != event.FormatHTML || !strings.Contains(c.FormattedBody, "<strong>bold</strong>") || !strings.Contains(c.FormattedBody, "<code>code</code>") {
		t.Errorf("formatted body %q (%s)", c.FormattedBody, c.Format)
	}
	if c.Body != "**bold** and `code`" {
		t.Errorf("plain body %q", c.Body)
	}
	if c.RelatesTo == nil || c.RelatesTo.Type != event.RelThread || c.RelatesTo.EventID != root {
		t.Errorf("reply not in the thread: %+v", c.RelatesTo)
	}
	// Raw HTML from the model is shown, not interpreted.
	ref, err = ch.Send(t.Context(), bus.Outbound{ChatID: got.ChatID, Content: `<img src=x onerror=alert(1)>`})
	if err != nil {
		t.Fatal(err)
	}
	evt = getEvent(t, w.alice, w.dm["alice"], id.EventID(ref.MessageID))
	if strings.Contains(string(evt.Content.VeryRaw), "<img") {
		t.Errorf("raw HTML passed through: %s", evt.Content.VeryRaw)
	}
}

func TestMediaBothWays(t *testing.T) {
	s := homeserver(t)
	w := newWorld(t, s)
	in := newInbox(string(w.mallory.ID))
	state, mediaDir := t.TempDir(), t.TempDir()
	w.seedSyncToken(t, state)
	ch := newChannel(t, s, w.bot, channels.Deps{Paths: configs.Paths{State: state, Media: mediaDir}}, func(c *Config) { c.MaxMediaBytes = 1000 })
	run(t, ch, in)
	ctx := t.Context()

	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 64)...)
	sendFile := func(from *mautrix.Client, room id.RoomID, name string, data []byte, caption string) {
		up, err := from.UploadMedia(ctx, mautrix.ReqUploadMedia{ContentBytes: data, ContentType: "image/png", FileName: name})
		if err != nil {
			t.Fatal(err)
		}
		c := &event.MessageEventContent{MsgType: event.MsgImage, Body: caption, FileName: name, URL: up.ContentURI.CUString(),
			Info: &event.FileInfo{MimeType: "image/png", Size: len(data)}}
		if _, err := from.SendMessageEvent(ctx, room, event.EventMessage, c); err != nil {
			t.Fatal(err)
		}
	}
	sendFile(w.alice.Client, w.dm["alice"], "cat.png", png, "look at this cat")
	got := in.Wait(t, "look at this cat")
	if len(got.Media) != 1 || !got.Media[0].IsImage() {
		t.Fatalf("media %+v", got.Media)
	}
	if data, err := os.ReadFile(got.Media[0].Path); err != nil || !bytes.Equal(data, png) {
		t.Errorf("downloaded file: %v", err)
	}
	if filepath.Dir(got.Media[0].Path) != filepath.Join(mediaDir, "matrix") {
		t.Errorf("saved at %s", got.Media[0].Path)
	}
	sendFile(w.alice.Client, w.dm["alice"], "huge.png", bytes.Repeat([]byte{1}, 5000), "a huge one")
	if got := in.Wait(t, "a huge one"); len(got.Media) != 0 || !strings.Contains(got.Content, "too large") {
		t.Errorf("oversized: %+v", got)
	}
	sendFile(w.mallory.Client, w.dm["mallory"], "x.png", png, "from the stranger")
	if got := in.Wait(t, "from the stranger"); len(got.Media) != 0 || !strings.Contains(got.Content, "not downloaded") {
		t.Errorf("stranger's file: %+v", got)
	}

	// Out: a file the agent sends arrives as an m.image Alice can download.
	out := filepath.Join(t.TempDir(), "chart.png")
	if err := os.WriteFile(out, png, 0o600); err != nil {
		t.Fatal(err)
	}
	ref, err := ch.SendMedia(ctx, bus.Outbound{ChatID: string(w.dm["alice"]), Content: "your chart", Media: []bus.Media{{Path: out, MIMEType: "image/png"}}})
	if err != nil {
		t.Fatal(err)
	}
	if ref.MessageID == "" {
		t.Fatal("no message id")
	}
	// Dendrite's read side trails its writes a little: poll.
	var img *event.MessageEventContent
	waitfor.True(t, "the bot's m.image", func() bool {
		resp, err := w.alice.Messages(ctx, w.dm["alice"], "", "", mautrix.DirectionBackward, nil, 5)
		if err != nil {
			return false
		}
		for _, evt := range resp.Chunk {
			var c event.MessageEventContent
			if json.Unmarshal(evt.Content.VeryRaw, &c) == nil && c.MsgType == event.MsgImage && evt.Sender == w.bot.ID {
				img = &c
				return true
			}
		}
		return false
	})
	uri, err := img.URL.Parse()
	if err != nil {
		t.Fatal(err)
	}
	data, err := w.alice.DownloadBytes(ctx, uri)
	if err != nil || !bytes.Equal(data, png) {
		t.Errorf("the uploaded file reads back as %d bytes, %v", len(data), err)
	}
}

func TestRejectedTokenEndsRun(t *testing.T) {
	s := homeserver(t)
	bot := s.Register(t, "bot")
	bad := *bot
	bad.Token = "not-a-valid-token"
	ch := newChannel(t, s, &bad, channels.Deps{}, nil)
	done := run(t, ch, newInbox(""))
	select {
	case err := <-done:
		done <- err
		if !errors.Is(err, ErrUnauthorized) || !channels.IsFatal(err) || !strings.Contains(err.Error(), "M_UNKNOWN_TOKEN") || strings.Contains(err.Error(), "not-a-valid-token") {
			t.Fatalf("Run returned %v; want ErrUnauthorized (M_UNKNOWN_TOKEN) as a fatal error without the token", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run kept going with a rejected token")
	}
	if h := ch.Health(); h.State != channels.StateFailed {
		t.Errorf("health %+v, want failed", h)
	}
}

func TestPasswordLogin(t *testing.T) {
	s := homeserver(t)
	w := newWorld(t, s)
	cfg := DefaultConfig()
	cfg.Enabled, cfg.AllowFrom = true, []string{"*"}
	cfg.Homeserver, cfg.UserID, cfg.Password = s.URL, string(w.bot.ID), matrixtest.Password(w.bot)
	ch, err := New(cfg, channels.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	in := newInbox("")
	run(t, ch, in)
	waitfor.True(t, "the channel to connect", func() bool { return ch.Health().State == channels.StateConnected })
	say(t, w.alice, w.dm["alice"], text("after a password login"))
	in.Wait(t, "after a password login")
}

func TestConfigValidation(t *testing.T) {
	good := DefaultConfig()
	good.Homeserver, good.UserID, good.AccessToken = "https://matrix.example.org", "@bot:example.org", "tok"
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*Config){
		"homeserver":     func(c *Config) { c.Homeserver = "matrix.example.org" },
		"userId":         func(c *Config) { c.UserID = "bot" },
		"accessToken":    func(c *Config) { c.AccessToken = "" },
		"groupPolicy":    func(c *Config) { c.GroupPolicy = "sometimes" },
		"groupAllowFrom": func(c *Config) { c.GroupPolicy = channels.GroupAllowlist },
	} {
		c := good
		edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), name+":") {
			t.Errorf("%s: error %v does not name the key", name, err)
		}
	}
	if _, err := New(Config{}, channels.Deps{}); err == nil {
		t.Error("an empty config was accepted")
	}
}
