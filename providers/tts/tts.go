// Package tts turns text into speech through an OpenAI-compatible
// POST {apiBase}/audio/speech endpoint (OpenAI, and the servers that copy
// its shape), for voice replies.
//
// A Client asks for Ogg/Opus ("opus"), which OpenAI returns as an Ogg
// container: the format Telegram voice messages need, so nothing is
// transcoded. The answer is checked page by page (oggopus.Check) before it
// is used. A server that only returns mp3 or wav is transcoded with
// ffmpeg when Config.FFmpeg names one; without ffmpeg the error says so
// (nanobot doctor reports it too).
//
// Speak saves the audio 0600 in the media folder and returns its path.
// A Client is safe for concurrent use; it does no IO until Synthesize.
package tts

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/internal/oggopus"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
	"github.com/nanobot-go/nanobot/providers"
)

// Defaults of Config.
const (
	DefaultModel    = "gpt-4o-mini-tts"
	DefaultVoice    = "alloy"
	DefaultFormat   = "opus"
	DefaultMaxChars = 4000 // OpenAI accepts 4096 characters
	maxAudioBytes   = 25 << 20
)

// Config configures a Client.
type Config struct {
	// APIBase is the endpoint up to /v1 (https://api.openai.com/v1).
	APIBase string
	// APIKey is sent as a bearer token; may be empty for local servers.
	APIKey string
	// Model is the speech model (gpt-4o-mini-tts, tts-1, tts-1-hd).
	Model string
	// Voice is the voice name (alloy, echo, nova, ...).
	Voice string
	// Format is the response_format asked for: opus (Ogg/Opus, what
	// voice messages need), mp3, wav, aac or flac.
	Format string
	// Instructions steer the voice of models that take them (gpt-4o-mini-tts).
	Instructions string
	// MaxChars cuts longer text at a sentence end before it is spoken.
	MaxChars int
	// FFmpeg is the ffmpeg binary used to turn other formats into
	// Ogg/Opus; "" means none (see FindFFmpeg).
	FFmpeg string
	// HTTPClient overrides the client; nil means one with a 2-minute timeout.
	HTTPClient *http.Client
}

// Client calls the speech endpoint.
type Client struct {
	cfg Config
}

// New builds a Client. It does no IO.
func New(cfg Config) (*Client, error) {
	if cfg.APIBase == "" {
		return nil, errors.New("tts: no apiBase (set tts.apiBase or configure the tts provider)")
	}
	if !strings.HasPrefix(cfg.APIBase, "http://") && !strings.HasPrefix(cfg.APIBase, "https://") {
		return nil, fmt.Errorf("tts: apiBase %q is not an http(s) URL", cfg.APIBase)
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.Voice == "" {
		cfg.Voice = DefaultVoice
	}
	if cfg.Format == "" {
		cfg.Format = DefaultFormat
	}
	if cfg.MaxChars <= 0 {
		cfg.MaxChars = DefaultMaxChars
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 2 * time.Minute}
	}
	return &Client{cfg: cfg}, nil
}

// Synthesize speaks text and returns Ogg/Opus audio, checked to be a
// well-formed stream.
func (c *Client) Synthesize(ctx context.Context, text string) ([]byte, error) {
	text = Clip(text, c.cfg.MaxChars)
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("tts: nothing to say")
	}
	body := map[string]any{"model": c.cfg.Model, "input": text, "voice": c.cfg.Voice, "response_format": c.cfg.Format}
	if c.cfg.Instructions != "" {
		body["instructions"] = c.cfg.Instructions
	}
	b, _ := json.Marshal(body)
	endpoint := strings.TrimRight(c.cfg.APIBase, "/") + "/audio/speech"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("tts: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("tts: %s", providers.Redact(err.Error(), c.cfg.APIKey))
	}
	defer resp.Body.Close()
	audio, err := io.ReadAll(io.LimitReader(resp.Body, maxAudioBytes+1))
	if err != nil {
		return nil, fmt.Errorf("tts: read audio: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("tts: %s: HTTP %d: %s", endpoint, resp.StatusCode, providers.Redact(firstLine(audio, 200), c.cfg.APIKey))
	}
	if len(audio) > maxAudioBytes {
		return nil, fmt.Errorf("tts: audio larger than %d MB", maxAudioBytes>>20)
	}
	if _, err := oggopus.Check(audio); err == nil {
		return audio, nil
	} else if !errors.Is(err, oggopus.ErrNotOggOpus) {
		return nil, fmt.Errorf("tts: %s returned a broken Ogg/Opus stream: %w", c.cfg.Model, err)
	}
	if c.cfg.FFmpeg == "" {
		return nil, fmt.Errorf("tts: the server returned %s, not Ogg/Opus, and voice messages need Ogg/Opus: set tts.format to \"opus\" or install ffmpeg to convert it", sniff(audio))
	}
	out, err := Transcode(ctx, c.cfg.FFmpeg, audio)
	if err != nil {
		return nil, err
	}
	if _, err := oggopus.Check(out); err != nil {
		return nil, fmt.Errorf("tts: ffmpeg output: %w", err)
	}
	return out, nil
}

// Speak synthesizes text and saves it as a new .ogg file (0600) in dir,
// returning the path.
func (c *Client) Speak(ctx context.Context, dir, text string) (string, error) {
	audio, err := c.Synthesize(ctx, text)
	if err != nil {
		return "", err
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	path := filepath.Join(dir, "voice-"+time.Now().UTC().Format("20060102-150405")+"-"+hex.EncodeToString(rnd[:])+".ogg")
	if err := atomicfile.Write(path, audio, 0o600); err != nil {
		return "", fmt.Errorf("tts: save audio: %w", err)
	}
	return path, nil
}

// FindFFmpeg returns the path of ffmpeg on PATH, or "".
func FindFFmpeg() string {
	p, err := exec.LookPath("ffmpeg")
	if err != nil {
		return ""
	}
	return p
}

// Transcode converts audio in any format ffmpeg reads to Ogg/Opus.
func Transcode(ctx context.Context, ffmpeg string, audio []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ffmpeg, "-hide_banner", "-loglevel", "error", "-i", "pipe:0",
		"-vn", "-c:a", "libopus", "-b:a", "32k", "-f", "ogg", "pipe:1")
	cmd.Stdin = bytes.NewReader(audio)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("tts: ffmpeg: %w: %s", err, firstLine(stderr.Bytes(), 200))
	}
	return out.Bytes(), nil
}

// Clip shortens text to at most max characters, at the last sentence end
// when there is one in the second half.
func Clip(text string, max int) string {
	text = strings.TrimSpace(text)
	if max <= 0 || utf8.RuneCountInString(text) <= max {
		return text
	}
	r := []rune(text)[:max]
	s := string(r)
	if i := strings.LastIndexAny(s, ".!?\n"); i >= len(s)/2 {
		return s[:i+1]
	}
	return s
}

// sniff names the audio format of data for error messages.
func sniff(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("ID3")) || len(data) > 1 && data[0] == 0xff && data[1]&0xe0 == 0xe0:
		return "mp3"
	case bytes.HasPrefix(data, []byte("RIFF")):
		return "wav"
	case bytes.HasPrefix(data, []byte("fLaC")):
		return "flac"
	case bytes.HasPrefix(data, []byte("OggS")):
		return "Ogg without Opus"
	}
	return http.DetectContentType(data)
}

func firstLine(b []byte, n int) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(s) > n {
		s = s[:n]
	}
	return s
}
