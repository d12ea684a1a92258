package media

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/providers/tts/ttstest"
)

func TestReadVoice(t *testing.T) {
	dir := t.TempDir()
	opus := filepath.Join(dir, "voice-1.ogg")
	notOpus := filepath.Join(dir, "voice-2.ogg")
	os.WriteFile(opus, ttstest.Opus, 0o600)
	os.WriteFile(notOpus, []byte(`{"error":"quota"}`), 0o600)

	v, err := ReadVoice(bus.Outbound{Voice: true, Media: []bus.Media{{Path: opus}}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The committed file is 0.6 s of a tone.
	if v.Duration < 550*time.Millisecond || v.Duration > 650*time.Millisecond || Seconds(v.Duration) != 1 {
		t.Errorf("duration %v (%d s), want about 0.6 s (1 s)", v.Duration, Seconds(v.Duration))
	}
	if len(v.Waveform) == 0 || len(v.Waveform) > 256 || v.Name != "voice-1.ogg" || len(v.Data) != len(ttstest.Opus) {
		t.Errorf("waveform %d levels, name %q, %d bytes", len(v.Waveform), v.Name, len(v.Data))
	}
	var peak byte
	for _, l := range v.Waveform {
		peak = max(peak, l)
	}
	if peak != 255 {
		t.Errorf("waveform peak %d, want scaled to 255", peak)
	}

	for _, tc := range []struct {
		m    bus.Outbound
		max  int64
		want string
	}{
		{bus.Outbound{}, 0, "no audio file"},
		{bus.Outbound{Media: []bus.Media{{Path: notOpus}}}, 0, "not an Ogg/Opus stream"},
		{bus.Outbound{Media: []bus.Media{{Path: opus}}}, 100, "more than"},
	} {
		if _, err := ReadVoice(tc.m, tc.max); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}
