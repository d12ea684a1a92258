package discord

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/discord/discordtest"
	"github.com/nanobot-go/nanobot/providers/tts/ttstest"
)

// A spoken reply is a Discord voice message: the IS_VOICE_MESSAGE flag,
// no text, one audio/ogg file with duration_secs and a waveform (the fake
// refuses the message otherwise, as Discord does), replying to the user.
func TestSendVoice(t *testing.T) {
	fake := discordtest.New(t)
	ch := newChannel(t, fake, nil, func(c *Config) { c.ReplyToMessage = true })
	voice := filepath.Join(t.TempDir(), "voice-1.ogg")
	os.WriteFile(voice, ttstest.Opus, 0o600)

	ref, err := ch.SendVoice(t.Context(), bus.Outbound{ChatID: general, Voice: true, ReplyTo: "999", Media: []bus.Media{{Path: voice, MIMEType: "audio/ogg"}}})
	if err != nil {
		t.Fatal(err)
	}
	sent := fake.Sent()
	if len(sent) != 1 || ref.MessageID != sent[0].MessageID || sent[0].ReplyTo != "999" {
		t.Fatalf("sent %+v, ref %+v", sent, ref)
	}
	s := sent[0]
	if s.Flags != 1<<13 || s.Content != "" || len(s.Files) != 1 || len(s.Attachments) != 1 {
		t.Fatalf("flags %d, content %q, %d files, %d attachments: want one voice message", s.Flags, s.Content, len(s.Files), len(s.Attachments))
	}
	if f := s.Files[0]; f.ContentType != "audio/ogg" || f.Name != "voice-1.ogg" || !bytes.Equal(f.Data, ttstest.Opus) {
		t.Errorf("file %q %q, %d bytes: want the Ogg/Opus file", f.Name, f.ContentType, len(f.Data))
	}
	a := s.Attachments[0]
	wave, err := base64.StdEncoding.DecodeString(a.Waveform)
	if a.Filename != "voice-1.ogg" || a.DurationSecs < 0.55 || a.DurationSecs > 0.65 || err != nil || len(wave) == 0 || len(wave) > 256 {
		t.Errorf("attachment %+v: want the file, about 0.6 s, a waveform of 1–256 levels", a)
	}

	bad := filepath.Join(t.TempDir(), "voice-2.ogg")
	os.WriteFile(bad, []byte("RIFF....WAVEfmt "), 0o600)
	_, err = ch.SendVoice(t.Context(), bus.Outbound{ChatID: general, Voice: true, Media: []bus.Media{{Path: bad}}})
	var pe *channels.PermanentError
	if !errors.As(err, &pe) || len(fake.Sent()) != 1 {
		t.Errorf("a WAV file: err %v, %d sent; want a permanent error and nothing sent", err, len(fake.Sent()))
	}
}
