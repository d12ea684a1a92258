package relay

import (
	"context"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// mediaChannel sends files; voiceChannel also has voice messages. Both
// record which call carried a message.
type mediaChannel struct{ *fakeChannel }

func (c mediaChannel) SendMedia(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	m.Content = "media:" + m.Content
	return c.Send(ctx, m)
}

type voiceChannel struct{ mediaChannel }

func (c voiceChannel) SendVoice(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	m.Content = "voice:" + m.Content
	return c.Send(ctx, m)
}

// A spoken reply goes out as a voice message where the platform has them,
// as a file where it has only files; a plain attachment never as voice.
func TestDispatcherRoutesVoice(t *testing.T) {
	voice := voiceChannel{mediaChannel{&fakeChannel{name: "tg", limit: 4096}}}
	files := mediaChannel{&fakeChannel{name: "slack", limit: 4096}}
	out := startDispatcher(t, DispatcherConfig{}, voice, files)
	audio := []bus.Media{{Path: "/media/voice.ogg", MIMEType: "audio/ogg"}}
	for _, ch := range []string{"tg", "slack"} {
		out <- bus.Outbound{Channel: ch, ChatID: "1", Kind: bus.KindMessage, Media: audio, Voice: true}
		out <- bus.Outbound{Channel: ch, ChatID: "1", Kind: bus.KindMessage, Media: audio, Content: "file"}
	}
	waitfor.True(t, "both channels' messages", func() bool {
		a, _ := voice.snapshot()
		b, _ := files.snapshot()
		return len(a) == 2 && len(b) == 2
	})
	a, _ := voice.snapshot()
	b, _ := files.snapshot()
	for _, tt := range []struct {
		got, want string
	}{
		{a[0].Content, "voice:"}, {a[1].Content, "media:file"},
		{b[0].Content, "media:"}, {b[1].Content, "media:file"},
	} {
		if tt.got != tt.want {
			t.Errorf("sent %q, want %q", tt.got, tt.want)
		}
	}
	if !channels.CanSpeak(voice) || !channels.CanSpeak(files) || channels.CanSpeak(&fakeChannel{name: "irc"}) {
		t.Error("CanSpeak: want true for voice and media channels, false for text-only")
	}
}
