package slack

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/slack/slacktest"
	"github.com/nanobot-go/nanobot/providers/tts/ttstest"
)

// A spoken reply is uploaded through Slack's external upload flow as the
// Ogg/Opus file itself, into the user's thread, titled with its length; a
// file that is not Ogg/Opus is refused before any upload.
func TestSendVoice(t *testing.T) {
	fake := slacktest.New(t)
	ch := newChannel(t, fake, nil, nil)
	voice := filepath.Join(t.TempDir(), "voice-1.ogg")
	os.WriteFile(voice, ttstest.Opus, 0o600)
	ref, err := ch.SendVoice(t.Context(), bus.Outbound{ChatID: general, Voice: true,
		Metadata: bus.Metadata{"thread_ts": "1.1"}, Media: []bus.Media{{Path: voice, MIMEType: "audio/ogg"}}})
	if err != nil || ref.ChatID != general {
		t.Fatalf("SendVoice = %+v, %v", ref, err)
	}
	files := fake.Files()
	if len(files) != 1 {
		t.Fatalf("%d uploads, want 1", len(files))
	}
	f := files[0]
	if f.Name != "voice-1.ogg" || f.Title != "Voice reply (1 s)" || f.Channel != general || f.ThreadTS != "1.1" || !bytes.Equal(f.Data, ttstest.Opus) {
		t.Errorf("upload %q %q in %s/%s, %d bytes: want the Ogg/Opus file in the thread", f.Name, f.Title, f.Channel, f.ThreadTS, len(f.Data))
	}

	bad := filepath.Join(t.TempDir(), "voice-2.ogg")
	os.WriteFile(bad, []byte("ID3 mp3"), 0o600)
	_, err = ch.SendVoice(t.Context(), bus.Outbound{ChatID: general, Voice: true, Media: []bus.Media{{Path: bad}}})
	var pe *channels.PermanentError
	if !errors.As(err, &pe) || len(fake.Files()) != 1 {
		t.Errorf("an MP3: err %v, %d uploads; want a permanent error and no upload", err, len(fake.Files()))
	}
}
