package stt_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/stt"
	"github.com/nanobot-go/nanobot/providers/stt/stttest"
)

const key = "sk-stt-secret-0123456789"

// voice is a small stand-in for a voice note: the services are fakes, so
// the bytes only need to arrive unchanged.
var voice = []byte("OggS\x00\x02fake opus voice note")

func voiceFile(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, voice, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// fast shortens the waits so tests run in milliseconds.
func fast(c stt.Config) stt.Config {
	c.RetryDelays = []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}
	c.PollInterval = time.Millisecond
	return c
}

func newClient(t *testing.T, c stt.Config) *stt.Client {
	t.Helper()
	cl, err := stt.New(fast(c))
	if err != nil {
		t.Fatalf("New(%+v): %v", c, err)
	}
	return cl
}

// basePath is the path of a provider's default endpoint ("/openai/v1").
func basePath(t *testing.T, spec stt.Spec) string {
	u, err := url.Parse(spec.DefaultAPIBase)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path
}

// TestTheRegistryIsNanobots pins the names, aliases, endpoints and
// default models to the Python nanobot's registry.
func TestTheRegistryIsNanobots(t *testing.T) {
	type row struct{ Name, Aliases, Base, Model string }
	var got []row
	for _, s := range stt.Providers() {
		got = append(got, row{s.Name, strings.Join(s.Aliases, ","), s.DefaultAPIBase, s.DefaultModel})
	}
	want := []row{
		{"groq", "", "https://api.groq.com/openai/v1", "whisper-large-v3"},
		{"openai", "", "https://api.openai.com/v1", "whisper-1"},
		{"openrouter", "", "https://openrouter.ai/api/v1", "openai/whisper-1"},
		{"xiaomi_mimo", "mimo,xiaomi", "https://api.xiaomimimo.com/v1", "mimo-v2.5-asr"},
		{"stepfun", "", "https://api.stepfun.com/v1", "stepaudio-2.5-asr"},
		{"assemblyai", "", "https://api.assemblyai.com/v2", "universal-3-pro,universal-2"},
		{"siliconflow", "silicon", "https://api.siliconflow.cn/v1", "FunAudioLLM/SenseVoiceSmall"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("registry (-nanobot +here):\n%s", d)
	}
}

// The config knows the same names (it checks them at load, and may not
// import this package).
func TestConfigKnowsTheSameNames(t *testing.T) {
	got := map[string][]string{}
	for _, s := range stt.Providers() {
		got[s.Name] = s.Aliases
	}
	if d := cmp.Diff(configs.TranscriptionProviders(), got, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("configs (-) and stt (+) disagree:\n%s", d)
	}
}

func TestLookup(t *testing.T) {
	for name, want := range map[string]string{
		"groq": "groq", "Groq": "groq", "mimo": "xiaomi_mimo", "xiaomi": "xiaomi_mimo", "xiaomiMimo": "xiaomi_mimo",
		"XIAOMI_MIMO": "xiaomi_mimo", "silicon": "siliconflow", "siliconFlow": "siliconflow", " assemblyai ": "assemblyai",
	} {
		if s, ok := stt.Lookup(name); !ok || s.Name != want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", name, s.Name, ok, want)
		}
	}
	for _, name := range []string{"", "deepgram", "whisper"} {
		if s, ok := stt.Lookup(name); ok {
			t.Errorf("Lookup(%q) = %q, want not found", name, s.Name)
		}
	}
}

// TestEveryNameReachesItsAPI sends a voice note through every provider
// name and alias and checks, on the wire, the request the service's API
// documents: method, path, authentication, model, language hint, audio.
func TestEveryNameReachesItsAPI(t *testing.T) {
	type check func(t *testing.T, reqs []stttest.Request, base string)
	bearer := func(t *testing.T, r stttest.Request) {
		t.Helper()
		if got := r.Header.Get("Authorization"); got != "Bearer "+key {
			t.Errorf("Authorization = %q, want the bearer key", got)
		}
	}
	one := func(t *testing.T, reqs []stttest.Request, path string) stttest.Request {
		t.Helper()
		if len(reqs) != 1 || reqs[0].Method != http.MethodPost || reqs[0].Path != path {
			t.Fatalf("requests = %+v, want one POST %s", reqs, path)
		}
		if string(reqs[0].Audio) != string(voice) {
			t.Errorf("audio = %q, want the file's bytes", reqs[0].Audio)
		}
		return reqs[0]
	}
	whisper := func(model string) check {
		return func(t *testing.T, reqs []stttest.Request, base string) {
			r := one(t, reqs, base+"/audio/transcriptions")
			bearer(t, r)
			want := map[string]string{"model": model, "language": "de", "response_format": "json"}
			if d := cmp.Diff(want, r.Fields); d != "" {
				t.Errorf("form fields (-want +got):\n%s", d)
			}
			if r.FileName != "voice.oga" || r.FileType != "audio/ogg" {
				t.Errorf("file part %q (%s), want voice.oga (audio/ogg)", r.FileName, r.FileType)
			}
		}
	}
	checks := map[stt.Wire]func(spec stt.Spec) check{
		stt.WireWhisper: func(spec stt.Spec) check { return whisper(spec.DefaultModel) },
		stt.WireOpenRouter: func(spec stt.Spec) check {
			return func(t *testing.T, reqs []stttest.Request, base string) {
				r := one(t, reqs, base+"/audio/transcriptions")
				bearer(t, r)
				if r.Fields != nil || r.Header.Get("Content-Type") != "application/json" {
					t.Errorf("OpenRouter got %s, want a JSON body", r.Header.Get("Content-Type"))
				}
				ia, _ := r.JSON["input_audio"].(map[string]any)
				if r.JSON["model"] != spec.DefaultModel || r.JSON["language"] != "de" || ia["format"] != "ogg" {
					t.Errorf("body = %v, want model %s, language de, input_audio.format ogg", r.JSON, spec.DefaultModel)
				}
			}
		},
		stt.WireMiMo: func(spec stt.Spec) check {
			return func(t *testing.T, reqs []stttest.Request, base string) {
				r := one(t, reqs, base+"/chat/completions")
				bearer(t, r)
				msgs, _ := r.JSON["messages"].([]any)
				m, _ := msgs[0].(map[string]any)
				parts, _ := m["content"].([]any)
				p, _ := parts[0].(map[string]any)
				ia, _ := p["input_audio"].(map[string]any)
				data, _ := ia["data"].(string)
				if r.JSON["model"] != spec.DefaultModel || m["role"] != "user" || p["type"] != "input_audio" ||
					!strings.HasPrefix(data, "data:audio/ogg;base64,") {
					t.Errorf("body = %v, want one user message with an audio/ogg data URL", r.JSON)
				}
				if d := cmp.Diff(map[string]any{"language": "de"}, r.JSON["asr_options"]); d != "" {
					t.Errorf("asr_options (-want +got):\n%s", d)
				}
			}
		},
		stt.WireStepFun: func(spec stt.Spec) check {
			return func(t *testing.T, reqs []stttest.Request, base string) {
				r := one(t, reqs, base+"/audio/asr/sse")
				bearer(t, r)
				if got := r.Header.Get("Accept"); got != "text/event-stream" {
					t.Errorf("Accept = %q", got)
				}
				a, _ := r.JSON["audio"].(map[string]any)
				in, _ := a["input"].(map[string]any)
				want := map[string]any{
					"transcription": map[string]any{"model": spec.DefaultModel, "language": "de", "enable_itn": true},
					"format":        map[string]any{"type": "ogg"},
				}
				if d := cmp.Diff(want, in); d != "" {
					t.Errorf("audio.input (-want +got):\n%s", d)
				}
			}
		},
		stt.WireAssemblyAI: func(spec stt.Spec) check {
			return func(t *testing.T, reqs []stttest.Request, base string) {
				if len(reqs) != 3 {
					t.Fatalf("requests = %+v, want upload, create, poll", reqs)
				}
				for _, r := range reqs {
					if got := r.Header.Get("Authorization"); got != key {
						t.Errorf("%s %s: Authorization = %q, want the bare key", r.Method, r.Path, got)
					}
				}
				up, create, poll := reqs[0], reqs[1], reqs[2]
				if up.Method != http.MethodPost || up.Path != base+"/upload" || up.Header.Get("Content-Type") != "application/octet-stream" || string(up.Audio) != string(voice) {
					t.Errorf("upload = %s %s (%s) %q", up.Method, up.Path, up.Header.Get("Content-Type"), up.Audio)
				}
				want := map[string]any{"audio_url": create.JSON["audio_url"],
					"speech_models": []any{"universal-3-pro", "universal-2"}, "language_code": "de"}
				if create.Method != http.MethodPost || create.Path != base+"/transcript" || !strings.HasSuffix(fmt.Sprint(create.JSON["audio_url"]), "/cdn/upload-1") {
					t.Errorf("create = %s %s %v", create.Method, create.Path, create.JSON)
				}
				if d := cmp.Diff(want, create.JSON); d != "" {
					t.Errorf("create body (-want +got):\n%s", d)
				}
				if poll.Method != http.MethodGet || poll.Path != base+"/transcript/tr_1" {
					t.Errorf("poll = %s %s", poll.Method, poll.Path)
				}
			}
		},
	}

	for _, spec := range stt.Providers() {
		for _, name := range append([]string{spec.Name}, spec.Aliases...) {
			t.Run(name, func(t *testing.T) {
				fake := stttest.New(t)
				fake.SetKey(key)
				fake.SetText(" what is the weather \n")
				base := basePath(t, spec)
				c := newClient(t, stt.Config{Provider: name, APIBase: fake.URL + base, APIKey: key, Language: "de"})
				if p, m := c.Service(); p != spec.Name || m != spec.DefaultModel {
					t.Errorf("Service() = %s, %s; want %s, %s", p, m, spec.Name, spec.DefaultModel)
				}
				text, err := c.Transcribe(context.Background(), voiceFile(t, "voice.oga"), "audio/ogg")
				if err != nil {
					t.Fatalf("Transcribe: %v", err)
				}
				if text != "what is the weather" {
					t.Errorf("text = %q", text)
				}
				checks[spec.Wire](spec)(t, fake.Requests(), base)
			})
		}
	}
}

// StepFun's older step-asr models live on its Whisper-compatible endpoint,
// which takes no language.
func TestStepFunStepASRIsWhisper(t *testing.T) {
	fake := stttest.New(t)
	c := newClient(t, stt.Config{Provider: "stepfun", APIBase: fake.URL + "/v1", APIKey: key, Model: "step-asr", Language: "zh"})
	if _, err := c.Transcribe(context.Background(), voiceFile(t, "voice.mp3"), ""); err != nil {
		t.Fatal(err)
	}
	r := fake.Requests()
	if len(r) != 1 || r[0].Path != "/v1/audio/transcriptions" {
		t.Fatalf("requests %+v", r)
	}
	if d := cmp.Diff(map[string]string{"model": "step-asr", "response_format": "json"}, r[0].Fields); d != "" {
		t.Errorf("fields (-want +got):\n%s", d)
	}
	if r[0].FileType != "audio/mpeg" {
		t.Errorf("file type %q, want audio/mpeg from the extension", r[0].FileType)
	}
}

// An apiBase may be the full endpoint, as users copy it from the docs.
func TestAPIBaseMayBeTheEndpoint(t *testing.T) {
	for _, tc := range []struct{ provider, path string }{
		{"groq", "/openai/v1/audio/transcriptions"},
		{"openrouter", "/api/v1/audio/transcriptions"},
		{"mimo", "/v1/chat/completions"},
		{"stepfun", "/v1/audio/asr/sse"},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			fake := stttest.New(t)
			c := newClient(t, stt.Config{Provider: tc.provider, APIBase: fake.URL + tc.path + "/", APIKey: key})
			if _, err := c.Transcribe(context.Background(), voiceFile(t, "v.ogg"), ""); err != nil {
				t.Fatal(err)
			}
			if r := fake.Requests(); len(r) != 1 || r[0].Path != tc.path {
				t.Errorf("requests %+v, want one to %s", r, tc.path)
			}
		})
	}
}

// Another name is a Whisper-compatible server when it has an apiBase;
// without one the error lists the known services.
func TestOtherProviders(t *testing.T) {
	_, err := stt.New(stt.Config{Provider: "deepgram", APIKey: key})
	if err == nil || !strings.Contains(err.Error(), "groq, openai, openrouter, xiaomi_mimo, stepfun, assemblyai, siliconflow") {
		t.Errorf("New(deepgram) = %v, want an error listing the known providers", err)
	}
	if _, err := stt.New(stt.Config{Provider: "groq", APIBase: "ftp://x"}); err == nil {
		t.Error("an ftp apiBase was accepted")
	}
	fake := stttest.New(t)
	c := newClient(t, stt.Config{Provider: "localWhisper", APIBase: fake.URL + "/v1"})
	if p, m := c.Service(); p != "localWhisper" || m != "whisper-1" {
		t.Errorf("Service() = %s, %s", p, m)
	}
	if _, err := c.Transcribe(context.Background(), voiceFile(t, "note.opus"), ""); err != nil {
		t.Fatal(err)
	}
	r := fake.Requests()
	if len(r) != 1 || r[0].Path != "/v1/audio/transcriptions" || r[0].Header.Get("Authorization") != "" ||
		r[0].FileName != "note.ogg" || r[0].FileType != "audio/ogg" || r[0].Fields["model"] != "whisper-1" {
		t.Errorf("request %+v: want note.ogg (audio/ogg), no key, whisper-1", r)
	}
	if _, ok := r[0].Fields["language"]; ok {
		t.Error("a language was sent without one configured")
	}
}

func TestAssemblyAIPollsUntilCompleted(t *testing.T) {
	fake := stttest.New(t)
	fake.SetPending(3)
	c := newClient(t, stt.Config{Provider: "assemblyai", APIBase: fake.URL + "/v2", APIKey: key, Model: "universal-2"})
	text, err := c.Transcribe(context.Background(), voiceFile(t, "a.wav"), "audio/wav")
	if err != nil || text != "hello from the fake" {
		t.Fatalf("Transcribe = %q, %v", text, err)
	}
	if n := fake.Polls(); n != 4 {
		t.Errorf("%d polls, want 3 processing + 1 completed", n)
	}
	create := fake.Requests()[1].JSON
	want := map[string]any{"audio_url": create["audio_url"], "speech_models": []any{"universal-2"}, "language_detection": true}
	if d := cmp.Diff(want, create); d != "" {
		t.Errorf("create without a language (-want +got):\n%s", d)
	}
}

func TestAssemblyAIErrorStatus(t *testing.T) {
	fake := stttest.New(t)
	fake.SetPending(1)
	fake.FailTranscript("Transcoding failed: file does not appear to contain audio")
	c := newClient(t, stt.Config{Provider: "assemblyai", APIBase: fake.URL + "/v2", APIKey: key})
	_, err := c.Transcribe(context.Background(), voiceFile(t, "a.ogg"), "")
	if !errors.Is(err, stt.ErrFailed) || !strings.Contains(err.Error(), "does not appear to contain audio") {
		t.Fatalf("err = %v, want ErrFailed with AssemblyAI's reason", err)
	}
}

func TestAssemblyAIPollTimeout(t *testing.T) {
	fake := stttest.New(t)
	fake.SetPending(1 << 30)
	c, err := stt.New(stt.Config{Provider: "assemblyai", APIBase: fake.URL + "/v2", APIKey: key,
		PollInterval: time.Millisecond, PollTimeout: 30 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Transcribe(context.Background(), voiceFile(t, "a.ogg"), "")
	if !errors.Is(err, stt.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
}

// Cancelling the context stops the polling at once.
func TestAssemblyAICancel(t *testing.T) {
	fake := stttest.New(t)
	fake.SetPending(1 << 30)
	c, err := stt.New(stt.Config{Provider: "assemblyai", APIBase: fake.URL + "/v2", APIKey: key, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Transcribe(ctx, voiceFile(t, "a.ogg"), "")
		done <- err
	}()
	waitfor.True(t, "the transcript request", func() bool { return len(fake.Requests()) == 2 })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Transcribe did not return after its context was cancelled")
	}
	if n := fake.Polls(); n != 0 {
		t.Errorf("%d polls after the cancel", n)
	}
}

func TestStepFunErrorEvent(t *testing.T) {
	fake := stttest.New(t)
	fake.FailTranscript("audio format not supported")
	c := newClient(t, stt.Config{Provider: "stepfun", APIBase: fake.URL + "/v1", APIKey: key})
	_, err := c.Transcribe(context.Background(), voiceFile(t, "a.ogg"), "")
	if !errors.Is(err, stt.ErrFailed) || !strings.Contains(err.Error(), "audio format not supported") {
		t.Fatalf("err = %v, want ErrFailed with the event's message", err)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d requests: an error event is not retried", n)
	}
}

func TestRetries(t *testing.T) {
	t.Run("transient", func(t *testing.T) {
		fake := stttest.New(t)
		fake.Fail(2, http.StatusServiceUnavailable, `{"error":{"message":"overloaded"}}`)
		c := newClient(t, stt.Config{Provider: "groq", APIBase: fake.URL + "/v1", APIKey: key})
		if text, err := c.Transcribe(context.Background(), voiceFile(t, "a.ogg"), ""); err != nil || text == "" {
			t.Fatalf("Transcribe = %q, %v", text, err)
		}
		if n := len(fake.Requests()); n != 3 {
			t.Errorf("%d requests, want 2 failures and a success", n)
		}
	})
	t.Run("permanent", func(t *testing.T) {
		fake := stttest.New(t)
		fake.Fail(1, http.StatusBadRequest, `{"error":{"message":"model not supported"}}`)
		c := newClient(t, stt.Config{Provider: "openai", APIBase: fake.URL + "/v1", APIKey: key})
		_, err := c.Transcribe(context.Background(), voiceFile(t, "a.ogg"), "")
		var pe *providers.Error
		if !errors.As(err, &pe) || pe.StatusCode != 400 || pe.Transient || !strings.Contains(err.Error(), "model not supported") {
			t.Fatalf("err = %v, want a permanent 400 with the service's message", err)
		}
		if n := len(fake.Requests()); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
	t.Run("gives up", func(t *testing.T) {
		fake := stttest.New(t)
		fake.Fail(10, http.StatusBadGateway, "bad gateway")
		c := newClient(t, stt.Config{Provider: "openrouter", APIBase: fake.URL + "/api/v1", APIKey: key})
		if _, err := c.Transcribe(context.Background(), voiceFile(t, "a.ogg"), ""); !providers.IsTransient(err) {
			t.Fatalf("err = %v, want the last transient failure", err)
		}
		if n := len(fake.Requests()); n != 4 {
			t.Errorf("%d requests, want 1 + 3 retries", n)
		}
	})
}

// The key never shows in an error: not when the service repeats it in
// its answer, on any API, nor when the connection fails.
func TestKeyNeverInErrors(t *testing.T) {
	for _, spec := range stt.Providers() {
		t.Run(spec.Name, func(t *testing.T) {
			fake := stttest.New(t)
			fake.SetKey("the-right-key-0123456789")
			c := newClient(t, stt.Config{Provider: spec.Name, APIBase: fake.URL + basePath(t, spec), APIKey: key})
			_, err := c.Transcribe(context.Background(), voiceFile(t, "a.ogg"), "")
			var pe *providers.Error
			if !errors.As(err, &pe) || pe.StatusCode != http.StatusUnauthorized {
				t.Fatalf("err = %v, want a 401", err)
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("the key is in the error: %v", err)
			}
		})
	}
	t.Run("5xx body", func(t *testing.T) {
		fake := stttest.New(t)
		fake.Fail(1, http.StatusInternalServerError, "upstream refused key "+key)
		c, _ := stt.New(stt.Config{Provider: "groq", APIBase: fake.URL + "/v1", APIKey: key, RetryDelays: []time.Duration{}})
		if _, err := c.Transcribe(context.Background(), voiceFile(t, "a.ogg"), ""); err == nil || strings.Contains(err.Error(), key) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		c, _ := stt.New(stt.Config{Provider: "groq", APIBase: srv.URL + "/" + key, APIKey: key, RetryDelays: []time.Duration{}})
		if _, err := c.Transcribe(context.Background(), voiceFile(t, "a.ogg"), ""); err == nil || strings.Contains(err.Error(), key) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestTooLarge(t *testing.T) {
	fake := stttest.New(t)
	big := filepath.Join(t.TempDir(), "long.wav")
	if err := os.WriteFile(big, make([]byte, 8<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, stt.Config{Provider: "mimo", APIBase: fake.URL + "/v1", APIKey: key})
	if _, err := c.Transcribe(context.Background(), big, "audio/wav"); !errors.Is(err, stt.ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge (MiMo takes 7.5 MB)", err)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d requests for a file over the limit", n)
	}
	if _, err := c.Transcribe(context.Background(), filepath.Join(t.TempDir(), "missing.ogg"), ""); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// An answer is read up to 1 MB, and one that is not the API's shape is an
// error, not an empty transcript.
func TestAnswers(t *testing.T) {
	for name, tc := range map[string]struct {
		body string
		want string
	}{
		"too big":    {`{"text":"` + strings.Repeat("a", 2<<20) + `"}`, "larger than"},
		"html":       {"<html>proxy login</html>", "unexpected answer"},
		"no text":    {`{"status":"ok"}`, "unexpected answer"},
		"empty text": {`{"text":""}`, ""},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			c := newClient(t, stt.Config{Provider: "openai", APIBase: srv.URL, APIKey: key})
			text, err := c.Transcribe(context.Background(), voiceFile(t, "a.ogg"), "")
			switch {
			case tc.want == "" && (err != nil || text != ""):
				t.Errorf("Transcribe = %q, %v; want silence", text, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// A request that outlives Timeout fails and is not tried again.
func TestTimeout(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	c := newClient(t, stt.Config{Provider: "groq", APIBase: srv.URL, APIKey: key, Timeout: 50 * time.Millisecond})
	_, err := c.Transcribe(context.Background(), voiceFile(t, "a.ogg"), "")
	if !errors.Is(err, providers.ErrRequestTimeout) || !strings.Contains(err.Error(), "no answer within 50ms") {
		t.Fatalf("err = %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}
