package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/feishu/feishutest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/relay"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// dispatch runs a real Dispatcher over ch until the test ends.
func dispatch(t *testing.T, ch channels.Channel) chan<- bus.Outbound {
	t.Helper()
	return dispatchWith(t, ch, relay.DispatcherConfig{MaxRetries: 2, RetryBase: 20 * time.Millisecond})
}

func dispatchWith(t *testing.T, ch channels.Channel, cfg relay.DispatcherConfig) chan<- bus.Outbound {
	t.Helper()
	d := relay.NewDispatcher(cfg, []channels.Channel{ch})
	out := make(chan bus.Outbound, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.Run(ctx, out)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return out
}

// TestStreamingCard: a streamed reply becomes one CardKit card: created in
// streaming mode, sent as an interactive message, updated with increasing
// sequences at least 0.5 s apart (the fake checks both), and finished with
// streaming mode off when the stream ends.
func TestStreamingCard(t *testing.T) {
	fake := feishutest.New(t)
	noViolations(t, fake)
	ch := newChannel(t, fake, nil, "", nil)
	rec := &channeltest.Recorder{}
	running(t, ch, rec)
	fake.Push(feishutest.Message{From: aliceID, Text: "stream please"})
	in := rec.Wait(t, "stream please")
	out := dispatch(t, ch)
	var full strings.Builder
	for i := range 8 {
		piece := "word" + itoa(i) + " "
		full.WriteString(piece)
		out <- bus.Outbound{Channel: "feishu", ChatID: in.ChatID, Kind: bus.KindDelta, Content: piece, StreamID: "s1", Metadata: in.Metadata}
		time.Sleep(150 * time.Millisecond) // paces the model's deltas, not a wait for the adapter
	}
	out <- bus.Outbound{Channel: "feishu", ChatID: in.ChatID, Kind: bus.KindStreamEnd, Content: full.String() + "**done**", StreamID: "s1", Final: true, Metadata: in.Metadata}
	var card *feishutest.Card
	waitfor.True(t, "the card to be finished", func() bool {
		sent := fake.Sent()
		if len(sent) == 0 {
			return false
		}
		card = fake.CardOf(sent[0].MessageID)
		return card != nil && !card.Streaming
	})
	sent := fake.Sent()
	if sent[0].MsgType != "interactive" || sent[0].Edit {
		t.Errorf("first call %+v, want an interactive message", sent[0])
	}
	minGap := time.Hour
	for i, s := range sent[1:] {
		if !s.Edit || s.MessageID != sent[0].MessageID {
			t.Errorf("call %+v, want an edit of %s", s, sent[0].MessageID)
		}
		minGap = min(minGap, s.At.Sub(sent[i].At))
	}
	t.Logf("%d calls for the stream, smallest gap %s", len(sent), minGap.Round(time.Millisecond))
	if card.Content != strings.TrimSpace(full.String()+"**done**") {
		t.Errorf("card shows %q", card.Content)
	}
	if card.Updates < 2 {
		t.Errorf("%d content updates, want the stream to show growing", card.Updates)
	}
	if len(card.Settings) != 1 || !strings.Contains(card.Settings[0], `"streaming_mode":false`) {
		t.Errorf("settings calls %q, want one turning streaming_mode off", card.Settings)
	}
	if card.Sequence != card.Updates+1 {
		t.Errorf("last sequence %d after %d updates and one settings call", card.Sequence, card.Updates)
	}
}

// TestStreamingIdleCardFinished: when the stream's end brings no new text
// the Dispatcher makes no final edit; the card is finished after
// finishIdle, and an edit after that turns streaming on again.
func TestStreamingIdleCardFinished(t *testing.T) {
	fake := feishutest.New(t)
	noViolations(t, fake)
	ch := newChannel(t, fake, nil, "", nil)
	ch.finishIdle = 300 * time.Millisecond
	rec := &channeltest.Recorder{}
	running(t, ch, rec)
	fake.Push(feishutest.Message{From: aliceID, Text: "hi"})
	in := rec.Wait(t, "hi")
	ctx := testCtx(t)
	m := bus.Outbound{Channel: "feishu", ChatID: in.ChatID, Kind: bus.KindMessage, Content: "thinking", StreamID: "s9", Metadata: in.Metadata}
	ref, err := ch.Send(ctx, m)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if err := ch.Edit(ctx, ref, bus.Outbound{Kind: bus.KindDelta, Content: "thinking more"}); err != nil {
		t.Fatalf("Edit: %v", err)
	}
	waitfor.True(t, "the idle card to be finished", func() bool { c := fake.CardOf(ref.MessageID); return c != nil && !c.Streaming })
	if err := ch.Edit(ctx, ref, bus.Outbound{Kind: bus.KindStreamEnd, Content: "thinking more, late", Final: true}); err != nil {
		t.Fatalf("late Edit: %v", err)
	}
	c := fake.CardOf(ref.MessageID)
	if c.Streaming || c.Content != "thinking more, late" || len(c.Settings) != 3 {
		t.Errorf("card after the late edit: %+v", c)
	}
	if err := ch.Edit(ctx, ref, bus.Outbound{Content: "after the end"}); err == nil {
		t.Error("an edit of a finished card succeeded")
	}
}

// TestFinishEndsTheCardAtOnce: the Dispatcher's Finish (a stream whose last
// text needed no edit) turns streaming off without waiting for finishIdle,
// and a second Finish does nothing.
func TestFinishEndsTheCardAtOnce(t *testing.T) {
	fake := feishutest.New(t)
	noViolations(t, fake)
	ch := newChannel(t, fake, nil, "", nil)
	ch.finishIdle = time.Hour
	rec := &channeltest.Recorder{}
	running(t, ch, rec)
	fake.Push(feishutest.Message{From: aliceID, Text: "hi"})
	in := rec.Wait(t, "hi")
	ctx := testCtx(t)
	ref, err := ch.Send(ctx, bus.Outbound{Channel: "feishu", ChatID: in.ChatID, Kind: bus.KindMessage, Content: "all of it", StreamID: "s1", Metadata: in.Metadata})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if c := fake.CardOf(ref.MessageID); c == nil || !c.Streaming {
		t.Fatalf("card before Finish: %+v", c)
	}
	if err := ch.Finish(ctx, ref); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	c := fake.CardOf(ref.MessageID)
	if c.Streaming || c.Content != "all of it" || len(c.Settings) != 1 {
		t.Fatalf("card after Finish: %+v", c)
	}
	if err := ch.Finish(ctx, ref); err != nil || len(fake.CardOf(ref.MessageID).Settings) != 1 {
		t.Fatalf("second Finish: %v, settings %d", err, len(fake.CardOf(ref.MessageID).Settings))
	}
}

// TestQuietStreamCardFinished: a stream whose end never comes (the turn's
// cluster worker died) is ended by the Dispatcher once it has been quiet
// for StreamQuiet: the card stops "generating" without the adapter's own
// idle timer.
func TestQuietStreamCardFinished(t *testing.T) {
	fake := feishutest.New(t)
	noViolations(t, fake)
	ch := newChannel(t, fake, nil, "", nil)
	ch.finishIdle = time.Hour
	rec := &channeltest.Recorder{}
	running(t, ch, rec)
	fake.Push(feishutest.Message{From: aliceID, Text: "hi"})
	in := rec.Wait(t, "hi")
	out := dispatchWith(t, ch, relay.DispatcherConfig{StreamQuiet: time.Second, WorkerIdle: 50 * time.Millisecond})
	out <- bus.Outbound{Channel: "feishu", ChatID: in.ChatID, Kind: bus.KindDelta, Content: "half an", StreamID: "s1", Metadata: in.Metadata}
	waitfor.True(t, "the quiet stream's card to be finished", func() bool {
		sent := fake.Sent()
		if len(sent) == 0 {
			return false
		}
		c := fake.CardOf(sent[0].MessageID)
		return c != nil && !c.Streaming
	})
	if c := fake.CardOf(fake.Sent()[0].MessageID); c.Content != "half an" {
		t.Errorf("card shows %q, want the text so far", c.Content)
	}
}

// TestStreamingOff: with streaming false the registered channel is not an
// Editor and sends post messages.
func TestStreamingOff(t *testing.T) {
	fake := feishutest.New(t)
	noViolations(t, fake)
	raw, _ := json.Marshal(map[string]any{"feishu": map[string]any{
		"enabled": true, "appId": feishutest.AppID, "appSecret": feishutest.AppSecret, "apiBase": fake.URL, "streaming": false, "reactEmoji": "",
	}})
	var cc configs.ChannelsConfig
	if err := json.Unmarshal(raw, &cc); err != nil {
		t.Fatal(err)
	}
	ch, err := Factory().New(cc, channels.Deps{})
	if err != nil {
		t.Fatalf("Factory: %v", err)
	}
	if _, ok := channels.EditorOf(ch); ok {
		t.Fatal("with streaming off the channel is an Editor")
	}
	rec := &channeltest.Recorder{}
	running(t, ch, rec)
	fake.Push(feishutest.Message{From: aliceID, Text: "plain please"})
	in := rec.Wait(t, "plain please")
	out := dispatch(t, ch)
	out <- bus.Outbound{Channel: "feishu", ChatID: in.ChatID, Kind: bus.KindDelta, Content: "# Title\n", StreamID: "s1"}
	out <- bus.Outbound{Channel: "feishu", ChatID: in.ChatID, Kind: bus.KindStreamEnd, Content: "# Title\nbody", StreamID: "s1", Final: true}
	waitfor.True(t, "the reply", func() bool { return len(fake.Sent()) == 1 })
	if s := fake.Sent()[0]; s.MsgType != "post" || s.Text != "**Title**\nbody" {
		t.Errorf("sent %+v", s)
	}
}

func TestTokenRefresh(t *testing.T) {
	fake := feishutest.New(t)
	noViolations(t, fake)
	ch := newChannel(t, fake, nil, "", nil)
	ctx := testCtx(t)
	msg := bus.Outbound{Channel: "feishu", ChatID: "oc_x", Content: "one", Final: true}
	if _, err := ch.Send(ctx, msg); err != nil {
		t.Fatalf("Send: %v", err)
	}
	fake.ExpireTokens()
	msg.Content = "two"
	if _, err := ch.Send(ctx, msg); err != nil {
		t.Fatalf("Send after the token expired: %v", err)
	}
	if n := fake.TokenFetches(); n != 2 {
		t.Errorf("%d token fetches, want 2", n)
	}
	if n := len(fake.Sent()); n != 2 {
		t.Errorf("%d messages sent, want 2", n)
	}
}

func TestBadCredentials(t *testing.T) {
	fake := feishutest.New(t)
	ch := newChannel(t, fake, nil, "", func(c *Config) { c.AppSecret = "wrong-secret-value" })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := ch.Run(ctx, &channeltest.Recorder{})
	if err == nil || ctx.Err() != nil {
		t.Fatalf("Run = %v, want it to give up on rejected credentials", err)
	}
	if strings.Contains(err.Error(), "wrong-secret-value") {
		t.Errorf("the error shows the secret: %v", err)
	}
	if h := ch.Health(); h.State != channels.StateFailed || strings.Contains(h.LastError, "wrong-secret-value") {
		t.Errorf("Health = %+v", h)
	}
	if _, err := ch.Send(ctx, bus.Outbound{ChatID: "oc_x", Content: "hi"}); err == nil || strings.Contains(err.Error(), "wrong-secret-value") {
		t.Errorf("Send = %v", err)
	}
}

func TestSendMedia(t *testing.T) {
	fake := feishutest.New(t)
	noViolations(t, fake)
	ch := newChannel(t, fake, nil, "", nil)
	dir := t.TempDir()
	png := filepath.Join(dir, "chart.png")
	pdf := filepath.Join(dir, "report.pdf")
	_ = os.WriteFile(png, append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...), 0o600)
	_ = os.WriteFile(pdf, []byte("%PDF-1.4 fake"), 0o600)
	ref, err := ch.SendMedia(testCtx(t), bus.Outbound{Channel: "feishu", ChatID: "oc_x", Content: "here you go", Media: []bus.Media{{Path: png}, {Path: pdf, Name: "report.pdf"}}})
	if err != nil {
		t.Fatalf("SendMedia: %v", err)
	}
	sent := fake.Sent()
	if len(sent) != 3 || sent[0].MessageID != ref.MessageID {
		t.Fatalf("sent %+v, ref %+v", sent, ref)
	}
	var types []string
	for _, s := range sent {
		types = append(types, s.MsgType)
	}
	if strings.Join(types, ",") != "post,image,file" {
		t.Errorf("message types %v", types)
	}
	ups := fake.Uploads()
	if len(ups) != 2 || ups[0].Kind != "image" || ups[1].FileType != "pdf" || ups[1].Name != "report.pdf" || string(ups[1].Data) != "%PDF-1.4 fake" {
		t.Errorf("uploads %+v", ups)
	}
	_, err = ch.SendMedia(testCtx(t), bus.Outbound{ChatID: "oc_x", Media: []bus.Media{{Path: filepath.Join(dir, "missing")}}})
	var pe *channels.PermanentError
	if !errors.As(err, &pe) {
		t.Errorf("missing file: %v, want a PermanentError", err)
	}
}
