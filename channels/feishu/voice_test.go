package feishu

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/feishu/feishutest"
	"github.com/nanobot-go/nanobot/providers/tts/ttstest"
)

// A spoken reply is an audio message: the Ogg/Opus file uploaded with
// file_type opus and its duration in milliseconds, then msg_type audio
// naming that file_key (the fake refuses an audio message whose file was
// not uploaded as opus). A file that is not Ogg/Opus is refused before
// any upload.
func TestSendVoice(t *testing.T) {
	fake := feishutest.New(t)
	noViolations(t, fake)
	ch := newChannel(t, fake, nil, "", nil)
	voice := filepath.Join(t.TempDir(), "voice-1.ogg")
	os.WriteFile(voice, ttstest.Opus, 0o600)
	ref, err := ch.SendVoice(testCtx(t), bus.Outbound{Channel: "feishu", ChatID: "oc_x", Voice: true, Media: []bus.Media{{Path: voice, MIMEType: "audio/ogg"}}})
	if err != nil {
		t.Fatalf("SendVoice: %v", err)
	}
	sent, ups := fake.Sent(), fake.Uploads()
	if len(ups) != 1 || len(sent) != 1 {
		t.Fatalf("uploads %+v, sent %+v", ups, sent)
	}
	up := ups[0]
	if up.Kind != "file" || up.FileType != "opus" || up.Name != "voice-1.opus" || !bytes.Equal(up.Data, ttstest.Opus) {
		t.Errorf("upload %s %q %q, %d bytes: want the Ogg/Opus file as opus", up.Kind, up.FileType, up.Name, len(up.Data))
	}
	if up.Duration < "550" || up.Duration > "650" || len(up.Duration) != 3 {
		t.Errorf("duration %q ms, want about 600", up.Duration)
	}
	if s := sent[0]; s.MsgType != "audio" || s.Text != "[audio "+up.Key+"]" || s.ChatID != "oc_x" || s.MessageID != ref.MessageID {
		t.Errorf("sent %+v, ref %+v: want an audio message playing %s", s, ref, up.Key)
	}

	bad := filepath.Join(t.TempDir(), "voice-2.ogg")
	os.WriteFile(bad, []byte("ID3 mp3"), 0o600)
	_, err = ch.SendVoice(testCtx(t), bus.Outbound{ChatID: "oc_x", Voice: true, Media: []bus.Media{{Path: bad}}})
	var pe *channels.PermanentError
	if !errors.As(err, &pe) || len(fake.Uploads()) != 1 {
		t.Errorf("an MP3: err %v, %d uploads; want a permanent error and no upload", err, len(fake.Uploads()))
	}
}
