package whatsapp

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"go.mau.fi/whatsmeow"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/providers/tts/ttstest"
)

// uploadRecorder keeps the bytes handed to Upload.
type uploadRecorder struct {
	*fakeClient
	mu   sync.Mutex
	data [][]byte
}

func (u *uploadRecorder) Upload(ctx context.Context, data []byte, kind whatsmeow.MediaType) (whatsmeow.UploadResponse, error) {
	u.mu.Lock()
	u.data = append(u.data, append([]byte(nil), data...))
	u.mu.Unlock()
	return u.fakeClient.Upload(ctx, data, kind)
}

// A spoken reply is a voice note: the Ogg/Opus file uploaded as audio
// media and sent as an AudioMessage with PTT, the opus mimetype and its
// length in seconds. A file that is not Ogg/Opus is refused before any
// upload.
func TestSendVoice(t *testing.T) {
	fake := &uploadRecorder{fakeClient: newFake()}
	cfg := DefaultConfig()
	cfg.Enabled = true
	ch, err := New(cfg, channels.Deps{Paths: configs.Paths{Media: t.TempDir(), State: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	ch.mu.Lock()
	ch.cli = fake
	ch.mu.Unlock()

	dir := t.TempDir()
	voice := filepath.Join(dir, "voice-1.ogg")
	os.WriteFile(voice, ttstest.Opus, 0o600)
	ref, err := ch.SendVoice(t.Context(), bus.Outbound{ChatID: alicePN.String(), Voice: true, Media: []bus.Media{{Path: voice, MIMEType: "audio/ogg"}}})
	if err != nil {
		t.Fatal(err)
	}
	sent := fake.sentMessages()
	if len(sent) != 1 || ref.MessageID == "" || sent[0].to != alicePN {
		t.Fatalf("sent %+v ref %+v", sent, ref)
	}
	am := sent[0].msg.GetAudioMessage()
	if am == nil || !am.GetPTT() || am.GetMimetype() != "audio/ogg; codecs=opus" || am.GetSeconds() != 1 || am.GetFileLength() != uint64(len(ttstest.Opus)) || am.GetDirectPath() == "" {
		t.Errorf("audio message %+v: want a PTT voice note, ogg/opus, 1 s", am)
	}
	if len(fake.uploads) != 1 || fake.uploads[0] != whatsmeow.MediaAudio || !bytes.Equal(fake.data[0], ttstest.Opus) {
		t.Errorf("uploads %v: want the Ogg/Opus file as audio media", fake.uploads)
	}

	bad := filepath.Join(dir, "voice-2.ogg")
	os.WriteFile(bad, []byte("ID3\x03mp3 data"), 0o600)
	_, err = ch.SendVoice(t.Context(), bus.Outbound{ChatID: alicePN.String(), Voice: true, Media: []bus.Media{{Path: bad}}})
	var pe *channels.PermanentError
	if !errors.As(err, &pe) || len(fake.uploads) != 1 {
		t.Errorf("non-Opus file: err %v, uploads %d: want a permanent error and no upload", err, len(fake.uploads))
	}
}
