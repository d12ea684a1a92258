// Package stt turns voice notes and audio files into text through the
// speech-to-text services the Python nanobot knows: Groq, OpenAI,
// OpenRouter, Xiaomi MiMo, StepFun, AssemblyAI and SiliconFlow (the
// registry, Providers), and any Whisper-compatible server.
//
// Each service's API has its own shape (Wire): OpenAI's multipart upload,
// OpenRouter's JSON with base64 audio, MiMo's chat completions, StepFun's
// server-sent events, AssemblyAI's upload, create and poll. A Client
// speaks the one its provider needs; Transcribe reads the file, sends it,
// and returns the text.
//
// Failures come back as errors that never hold the API key: an HTTP or
// network failure is a *providers.Error (StatusCode, Transient), a file
// over the service's limit is ErrTooLarge, a service that could not make
// out the audio is ErrFailed, AssemblyAI taking longer than
// Config.PollTimeout is ErrTimeout; a cancelled ctx gives ctx's error.
// Transient failures (429, 5xx, a dropped connection) are tried again
// after 1 s, 2 s and 4 s (or the service's Retry-After), never past ctx.
// Answers are read up to 1 MB; each request is bounded by Config.Timeout.
//
// A Client is safe for concurrent use; New does no IO.
package stt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/providers"
)

// Errors callers may branch on, wrapped in what Transcribe returns.
var (
	// ErrTooLarge: the file is over the service's upload limit.
	ErrTooLarge = errors.New("audio file too large")
	// ErrFailed: the service answered but could not transcribe the audio
	// (AssemblyAI's status "error", an error event from StepFun).
	ErrFailed = errors.New("the service could not transcribe the audio")
	// ErrTimeout: AssemblyAI's transcript was not ready within
	// Config.PollTimeout.
	ErrTimeout = errors.New("the transcript was not ready in time")
)

// Defaults of Config.
const (
	DefaultTimeout      = 2 * time.Minute
	DefaultPollTimeout  = 5 * time.Minute
	DefaultPollInterval = time.Second
	// maxPollInterval is what the wait between polls grows to.
	maxPollInterval = 5 * time.Second
	// maxAnswer bounds a service's answer: a transcript is text, and a
	// bigger body is a proxy's page or a broken server.
	maxAnswer = 1 << 20
	// maxRetryAfter caps a service's Retry-After hint.
	maxRetryAfter = 30 * time.Second
	// customModel is the model of a Whisper-compatible server named by
	// APIBase alone.
	customModel = "whisper-1"
)

var defaultDelays = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}

// Config configures a Client.
type Config struct {
	// Provider names the service: a registry name or alias ("groq",
	// "mimo"), or any other name for a Whisper-compatible server at
	// APIBase ("" too).
	Provider string
	// APIBase is the endpoint up to the version ("https://api.groq.com/openai/v1",
	// "https://api.assemblyai.com/v2"); "" means the provider's default.
	// A full endpoint ("…/audio/transcriptions", "…/chat/completions",
	// "…/audio/asr/sse") is accepted too.
	APIBase string
	// APIKey authenticates the requests; may be empty for a local server.
	APIKey string
	// Model is the speech model; "" means the provider's default
	// (whisper-1 for other servers).
	Model string
	// Language is the spoken language as an ISO 639 code ("de"), sent as
	// a hint where the API takes one; "" lets the service detect it.
	Language string
	// Timeout bounds each request (default DefaultTimeout).
	Timeout time.Duration
	// PollTimeout bounds the wait for AssemblyAI's transcript (default
	// DefaultPollTimeout); PollInterval is the first wait between polls
	// (default DefaultPollInterval), growing to 5 s.
	PollTimeout, PollInterval time.Duration
	// RetryDelays are the waits before the retries of a transient failure;
	// nil means 1 s, 2 s, 4 s, an empty non-nil slice no retries.
	RetryDelays []time.Duration
	// HTTPClient overrides the client (nil: one with the environment's
	// proxy and no overall timeout; Timeout bounds each request).
	HTTPClient *http.Client
}

// Client transcribes audio files with one service.
type Client struct {
	cfg      Config
	name     string // provider name, for errors and the usage ledger
	wire     Wire
	maxAudio int64
	delays   []time.Duration
	client   *http.Client
}

// New builds a Client. A provider the registry does not know needs
// APIBase; the error then lists the ones it knows. It does no IO.
func New(cfg Config) (*Client, error) {
	spec, known := Lookup(cfg.Provider)
	c := &Client{cfg: cfg, name: cfg.Provider, maxAudio: defaultMaxAudio}
	switch {
	case known:
		c.name, c.maxAudio = spec.Name, spec.MaxAudioBytes
		if c.cfg.APIBase == "" {
			c.cfg.APIBase = spec.DefaultAPIBase
		}
		if c.cfg.Model == "" {
			c.cfg.Model = spec.DefaultModel
		}
		c.wire = wireFor(spec, c.cfg.Model)
	case cfg.APIBase == "":
		return nil, fmt.Errorf("stt: unknown provider %q (known: %s); another service needs an apiBase with a Whisper-compatible /audio/transcriptions", cfg.Provider, strings.Join(Names(), ", "))
	default:
		if c.name == "" {
			c.name = "custom"
		}
		if c.cfg.Model == "" {
			c.cfg.Model = customModel
		}
		c.wire = WireWhisper
	}
	if b := c.cfg.APIBase; !strings.HasPrefix(b, "http://") && !strings.HasPrefix(b, "https://") {
		return nil, fmt.Errorf("stt: %s: apiBase %q is not an http(s) URL", c.name, b)
	}
	if c.cfg.Timeout <= 0 {
		c.cfg.Timeout = DefaultTimeout
	}
	if c.cfg.PollTimeout <= 0 {
		c.cfg.PollTimeout = DefaultPollTimeout
	}
	if c.cfg.PollInterval <= 0 {
		c.cfg.PollInterval = DefaultPollInterval
	}
	c.delays = defaultDelays
	if cfg.RetryDelays != nil {
		c.delays = slices.Clone(cfg.RetryDelays)
	}
	c.client = cfg.HTTPClient
	if c.client == nil {
		c.client = &http.Client{}
	}
	return c, nil
}

// Service names the provider and the model, for the usage ledger and logs.
func (c *Client) Service() (provider, model string) { return c.name, c.cfg.Model }

// Transcribe returns what is said in the audio file at path; mimeType is
// its content type if known ("audio/ogg"), else it is told by the file's
// extension. Silence gives "" and no error.
func (c *Client) Transcribe(ctx context.Context, path, mimeType string) (string, error) {
	audio, err := c.read(path, mimeType)
	if err != nil {
		return "", err
	}
	var text string
	switch c.wire {
	case WireOpenRouter:
		text, err = c.openRouter(ctx, audio)
	case WireMiMo:
		text, err = c.mimo(ctx, audio)
	case WireStepFun:
		text, err = c.stepFun(ctx, audio)
	case WireAssemblyAI:
		text, err = c.assemblyAI(ctx, audio)
	default:
		text, err = c.whisper(ctx, audio)
	}
	if err != nil {
		return "", fmt.Errorf("stt: %w", err)
	}
	return strings.TrimSpace(text), nil
}

// audioFile is the file being transcribed.
type audioFile struct {
	name string // base name
	mime string
	data []byte
}

func (c *Client) read(path, mimeType string) (audioFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return audioFile{}, fmt.Errorf("stt: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, c.maxAudio+1))
	if err != nil {
		return audioFile{}, fmt.Errorf("stt: read %s: %w", path, err)
	}
	if int64(len(data)) > c.maxAudio {
		return audioFile{}, fmt.Errorf("stt: %s: %s is over %s's limit of %d MB: %w", c.name, filepath.Base(path), c.name, c.maxAudio>>20, ErrTooLarge)
	}
	return audioFile{name: filepath.Base(path), mime: mimeOf(path, mimeType), data: data}, nil
}

// endpoint is APIBase with path appended, unless APIBase already ends in it.
func (c *Client) endpoint(path string) string {
	base := strings.TrimRight(c.cfg.APIBase, "/")
	if strings.HasSuffix(base, "/"+path) {
		return base
	}
	return base + "/" + path
}

// header is the authentication the service expects, and the content type.
func (c *Client) header(contentType string) http.Header {
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	if c.cfg.APIKey != "" {
		if c.wire == WireAssemblyAI {
			h.Set("Authorization", c.cfg.APIKey)
		} else {
			h.Set("Authorization", "Bearer "+c.cfg.APIKey)
		}
	}
	return h
}

// call sends one request (retried while it fails transiently) and
// returns the body of its 2xx answer.
func (c *Client) call(ctx context.Context, method, url string, h http.Header, body []byte) ([]byte, error) {
	var out []byte
	err := c.retrying(ctx, func(ctx context.Context) error {
		resp, err := c.do(ctx, method, url, h, body)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		out, err = c.answer(ctx, resp)
		return err
	})
	return out, err
}

// do sends a request; a failure without an answer is a *providers.Error.
func (c *Client) do(ctx context.Context, method, url string, h http.Header, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, &providers.Error{Provider: c.name, Message: providers.Redact(err.Error(), c.cfg.APIKey)}
	}
	req.Header = h.Clone()
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, c.netError(ctx, err)
	}
	return resp, nil
}

// answer reads a response: its body when the status is 2xx, else the
// service's error.
func (c *Client) answer(ctx context.Context, resp *http.Response) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, c.netError(ctx, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, providers.HTTPError(c.name, resp.StatusCode, resp.Header, b, c.cfg.APIKey)
	}
	if len(b) > maxAnswer {
		return nil, &providers.Error{Provider: c.name, StatusCode: resp.StatusCode, Message: fmt.Sprintf("answer larger than %d KB", maxAnswer>>10)}
	}
	return b, nil
}

// netError classifies a failure without an answer. One request running
// out of Timeout is not tried again: a service that slow is slow again.
func (c *Client) netError(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && errors.Is(err, context.DeadlineExceeded) {
		return &providers.Error{Provider: c.name, Message: fmt.Sprintf("no answer within %s", c.cfg.Timeout), Err: providers.ErrRequestTimeout}
	}
	return providers.NetworkError(c.name, err, c.cfg.APIKey)
}

// retrying runs attempt, each time bounded by Timeout, until it succeeds,
// fails for good, or the retries are used up. The caller's cancellation
// ends it at once with ctx's error.
func (c *Client) retrying(ctx context.Context, attempt func(context.Context) error) error {
	for i := 0; ; i++ {
		actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		err := attempt(actx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return providers.Canceled(c.name, ctx.Err())
		}
		if !providers.IsTransient(err) || i >= len(c.delays) {
			return err
		}
		wait := c.delays[i]
		var pe *providers.Error
		if errors.As(err, &pe) && pe.RetryAfter > 0 {
			wait = min(max(wait, time.Duration(pe.RetryAfter)*time.Millisecond), maxRetryAfter)
		}
		if err := providers.Sleep(ctx, wait); err != nil {
			return providers.Canceled(c.name, err)
		}
	}
}

// clip cuts s to at most n runes.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
