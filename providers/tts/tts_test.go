package tts_test

import (
	"encoding/binary"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/internal/oggopus"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/providers/tts"
	"github.com/nanobot-go/nanobot/providers/tts/ttstest"
)

const key = "sk-tts-0123456789"

func TestCheckOggOpusAcceptsTheAsset(t *testing.T) {
	info, err := oggopus.Check(ttstest.Opus)
	if err != nil {
		t.Fatalf("CheckOggOpus(asset): %v", err)
	}
	// opusenc wrote 0.6 s of mono audio in 20 ms packets.
	if info.Channels != 1 || info.Packets != 2+31 || info.Samples != 28800 {
		t.Errorf("info = %+v, want 1 channel, 33 packets, 28800 samples", info)
	}
}

func TestCheckOggOpusRejects(t *testing.T) {
	flip := func(i int) []byte {
		b := append([]byte(nil), ttstest.Opus...)
		b[i] ^= 0x40
		return b
	}
	noEOS := append([]byte(nil), ttstest.Opus...)
	// Find the last page and clear its EOS flag (the CRC then fails too,
	// which is what a player sees).
	last := strings.LastIndex(string(noEOS), "OggS")
	noEOS[last+5] &^= 0x04
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"mp3", []byte("ID3\x03\x00\x00\x00"), "not an Ogg/Opus stream"},
		{"payload bit flipped", flip(len(ttstest.Opus) - 10), "CRC"},
		{"OpusHead magic broken", flip(28 + 2), "CRC"},
		{"truncated", ttstest.Opus[:len(ttstest.Opus)-100], "truncated"},
		{"no end of stream", noEOS, "CRC"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := oggopus.Check(tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// A page with a valid CRC but a wrong magic is caught by the header check,
// not only by the CRC.
func TestCheckOggOpusChecksMagicBehindValidCRC(t *testing.T) {
	b := append([]byte(nil), ttstest.Opus...)
	nseg := int(b[26])
	copy(b[27+nseg:], "OpusHEAD")
	binary.LittleEndian.PutUint32(b[22:26], 0)
	binary.LittleEndian.PutUint32(b[22:26], oggopus.CRC(b[:27+nseg+int(b[27])]))
	_, err := oggopus.Check(b)
	if !errors.Is(err, oggopus.ErrNotOggOpus) {
		t.Errorf("err = %v, want ErrNotOggOpus", err)
	}
}

func TestSpeakSavesOpus0600(t *testing.T) {
	srv := ttstest.New(t)
	c, err := tts.New(tts.Config{APIBase: srv.APIBase(), APIKey: key, Model: "tts-1", Voice: "nova", Instructions: "cheerful"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path, err := c.Speak(t.Context(), dir, "Hello **there**.")
	if err != nil {
		t.Fatalf("Speak: %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oggopus.Check(data); err != nil {
		t.Errorf("saved file: %v", err)
	}
	st, _ := os.Stat(path)
	if filepath.Dir(path) != dir || filepath.Ext(path) != ".ogg" || st.Mode().Perm() != 0o600 {
		t.Errorf("saved %s mode %v, want a .ogg in %s with mode 0600", path, st.Mode().Perm(), dir)
	}
	reqs := srv.Requests()
	want := map[string]any{"model": "tts-1", "voice": "nova", "input": "Hello **there**.", "response_format": "opus", "instructions": "cheerful"}
	if len(reqs) != 1 || reqs[0].Authorization != "Bearer "+key {
		t.Fatalf("requests = %+v", reqs)
	}
	if diff := cmp.Diff(want, reqs[0].Body); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

func TestSynthesizeErrors(t *testing.T) {
	srv := ttstest.New(t)
	c, _ := tts.New(tts.Config{APIBase: srv.APIBase(), APIKey: key})

	srv.SetAudio(http.StatusUnauthorized, []byte(`{"error":{"message":"Incorrect API key provided: `+key+`"}}`))
	_, err := c.Synthesize(t.Context(), "hi")
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") || strings.Contains(err.Error(), key) {
		t.Errorf("401: err = %v, want HTTP 401 without the key", err)
	}

	srv.SetAudio(http.StatusOK, []byte("RIFF\x24\x00\x00\x00WAVEfmt "))
	_, err = c.Synthesize(t.Context(), "hi")
	if err == nil || !strings.Contains(err.Error(), "returned wav") || !strings.Contains(err.Error(), "ffmpeg") {
		t.Errorf("wav without ffmpeg: err = %v, want it to name wav and ffmpeg", err)
	}

	if _, err := c.Synthesize(t.Context(), "  "); err == nil {
		t.Error("empty text: want an error")
	}
}

// A server that returns wav is converted by the configured ffmpeg. The
// stand-in ffmpeg reads stdin and writes the Opus asset, so the test checks
// the pipe wiring and the check of its output without needing ffmpeg.
func TestSynthesizeTranscodesWithFFmpeg(t *testing.T) {
	srv := ttstest.New(t)
	dir := t.TempDir()
	asset := filepath.Join(dir, "out.opus")
	if err := os.WriteFile(asset, ttstest.Opus, 0o600); err != nil {
		t.Fatal(err)
	}
	ffmpeg := filepath.Join(dir, "ffmpeg")
	script := "#!/bin/sh\ncat > " + filepath.Join(dir, "in.wav") + "\ncat " + asset + "\n"
	if err := os.WriteFile(ffmpeg, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	wav := []byte("RIFF\x24\x00\x00\x00WAVEfmt data")
	srv.SetAudio(http.StatusOK, wav)
	c, _ := tts.New(tts.Config{APIBase: srv.APIBase(), Format: "wav", FFmpeg: ffmpeg})
	out, err := c.Synthesize(t.Context(), "hi")
	if err != nil {
		t.Fatalf("Synthesize: %v", err)
	}
	if _, err := oggopus.Check(out); err != nil {
		t.Errorf("output: %v", err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "in.wav"))
	if string(got) != string(wav) {
		t.Errorf("ffmpeg got %q on stdin, want the server's wav", got)
	}
	if f := srv.Requests()[0].Body["response_format"]; f != "wav" {
		t.Errorf("response_format = %v, want wav", f)
	}
}

func TestClip(t *testing.T) {
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"One two. Three four five six", 12, "One two."},
		{"abcdefghij", 4, "abcd"},
		{"héllo wörld", 5, "héllo"},
	} {
		if got := tts.Clip(tt.in, tt.max); got != tt.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}
