package image_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/tools"
	imagetool "github.com/nanobot-go/nanobot/tools/image"
)

// wireFake records requests and answers them with answer.
type wireFake struct {
	mu      sync.Mutex
	paths   []string
	headers []http.Header
	bodies  []map[string]any
	answer  func(path string, body map[string]any) (int, any)
}

func (f *wireFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	f.paths = append(f.paths, r.URL.Path)
	f.headers = append(f.headers, r.Header.Clone())
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	status, ans := f.answer(r.URL.Path, body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(ans)
}

func startWire(t *testing.T, answer func(string, map[string]any) (int, any)) (*wireFake, string) {
	f := &wireFake{answer: answer}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

// savedImages runs the tool and returns the files it saved, checking each
// is 0600 under media/generated and holds want.
func savedImages(t *testing.T, res tools.Result, media string, want []byte) []string {
	t.Helper()
	var paths []string
	for line := range strings.SplitSeq(res.Content, "\n") {
		if p, ok := strings.CutPrefix(line, "- "); ok {
			paths = append(paths, p)
		}
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o600 || filepath.Dir(p) != filepath.Join(media, imagetool.GeneratedDir) {
			t.Fatalf("saved %s: %v %v", p, st, err)
		}
		if got, _ := os.ReadFile(p); !bytes.Equal(got, want) {
			t.Errorf("%s does not hold the server's image", p)
		}
	}
	return paths
}

func ledgerCost(t *testing.T, dir string) (*float64, usage.Row) {
	t.Helper()
	sum, err := usage.Summarize(t.Context(), dir, time.UTC, usage.Filter{}, usage.GroupModel)
	if err != nil {
		t.Fatal(err)
	}
	return sum.Total.Cost(), sum.Total
}

// Gemini's native generateContent: the key in x-goog-api-key, the prompt
// as a user part, IMAGE in responseModalities and the size as an aspect
// ratio; the image comes back as an inlineData part beside text. The
// registry's OpenAI-compatible apiBase (…/v1beta/openai) is taken back to
// the native API. Two images are two calls; the cost is Google's price.
func TestGeminiGenerateContent(t *testing.T) {
	img := tinyPNG(t)
	fake, url := startWire(t, func(path string, _ map[string]any) (int, any) {
		return 200, map[string]any{
			"candidates": []any{map[string]any{
				"content": map[string]any{"role": "model", "parts": []any{
					map[string]any{"text": "Here is a red dot."},
					map[string]any{"inlineData": map[string]any{"mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(img)}},
				}},
				"finishReason": "STOP", "index": 0,
			}},
			"usageMetadata": map[string]any{"promptTokenCount": 9, "candidatesTokenCount": 1295, "totalTokenCount": 1304},
			"modelVersion":  "gemini-2.5-flash-image",
		}
	})
	led, ledDir := openLedger(t)
	media := t.TempDir()
	tool, err := imagetool.New(imagetool.Options{APIBase: url + "/v1beta/openai", APIKey: key, API: imagetool.APIGemini,
		Provider: "gemini", Model: "gemini-2.5-flash-image", MediaDir: media, Record: usage.ImageRecorder(led, nil)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tool.Execute(t.Context(), map[string]any{"prompt": "a red dot", "size": "1792x1024", "n": 2})
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if paths := savedImages(t, res, media, img); len(paths) != 2 || !strings.Contains(res.Content, "Here is a red dot.") {
		t.Fatalf("result %q: want two images and the model's words", res.Content)
	}
	if len(fake.paths) != 2 || fake.paths[0] != "/v1beta/models/gemini-2.5-flash-image:generateContent" {
		t.Fatalf("paths %q", fake.paths)
	}
	if got := fake.headers[0].Get("X-Goog-Api-Key"); got != key || fake.headers[0].Get("Authorization") != "" {
		t.Errorf("key header %q, authorization %q", got, fake.headers[0].Get("Authorization"))
	}
	want := map[string]any{
		"contents":         []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "a red dot"}}}},
		"generationConfig": map[string]any{"responseModalities": []any{"TEXT", "IMAGE"}, "imageConfig": map[string]any{"aspectRatio": "16:9"}},
	}
	if diff := cmp.Diff(want, fake.bodies[0]); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	cost, tot := ledgerCost(t, ledDir)
	if !near(cost, 0.078) || tot.Output != 2590 {
		t.Errorf("ledger %+v cost %v, want $0.078 and 2590 output tokens", tot, cost)
	}
}

// An Imagen model goes to :predict with sampleCount; an unknown Gemini
// image model is recorded without a cost, not as free; a blocked prompt
// and a text-only answer are errors that say so.
func TestGeminiImagenAndRefusals(t *testing.T) {
	img := tinyPNG(t)
	var mode string
	fake, url := startWire(t, func(path string, _ map[string]any) (int, any) {
		switch {
		case strings.HasSuffix(path, ":predict"):
			p := map[string]any{"bytesBase64Encoded": base64.StdEncoding.EncodeToString(img), "mimeType": "image/png"}
			return 200, map[string]any{"predictions": []any{p, p, p}}
		case mode == "blocked":
			return 200, map[string]any{"promptFeedback": map[string]any{"blockReason": "SAFETY"}}
		case mode == "text":
			return 200, map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"parts": []any{map[string]any{"text": "I cannot draw that."}}}, "finishReason": "STOP"}}}
		case mode == "error":
			return 400, map[string]any{"error": map[string]any{"code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT"}}
		}
		return 200, map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"parts": []any{
			map[string]any{"inlineData": map[string]any{"mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(img)}}}}}}}
	})
	led, ledDir := openLedger(t)
	media := t.TempDir()
	imagen, _ := imagetool.New(imagetool.Options{APIBase: url + "/v1beta", APIKey: key, API: imagetool.APIGemini,
		Provider: "gemini", Model: "imagen-4.0-generate-001", MediaDir: media, Record: usage.ImageRecorder(led, nil)})
	res, err := imagen.Execute(t.Context(), map[string]any{"prompt": "three dots", "size": "1024x1536", "n": 3})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(savedImages(t, res, media, img)); n != 3 {
		t.Errorf("%d images saved, want 3", n)
	}
	want := map[string]any{"instances": []any{map[string]any{"prompt": "three dots"}}, "parameters": map[string]any{"sampleCount": float64(3), "aspectRatio": "2:3"}}
	if fake.paths[0] != "/v1beta/models/imagen-4.0-generate-001:predict" || !cmp.Equal(want, fake.bodies[0]) {
		t.Errorf("imagen request %s %v", fake.paths[0], cmp.Diff(want, fake.bodies[0]))
	}
	if cost, _ := ledgerCost(t, ledDir); !near(cost, 0.12) {
		t.Errorf("imagen cost %v, want $0.12", cost)
	}

	unknownLed, unknownDir := openLedger(t)
	other, _ := imagetool.New(imagetool.Options{APIBase: url + "/v1beta", APIKey: key, API: imagetool.APIGemini,
		Provider: "gemini", Model: "gemini-9-image-next", MediaDir: media, Record: usage.ImageRecorder(unknownLed, nil)})
	if _, err := other.Execute(t.Context(), map[string]any{"prompt": "x"}); err != nil {
		t.Fatal(err)
	}
	if cost, tot := ledgerCost(t, unknownDir); cost != nil || tot.Calls != 1 {
		t.Errorf("unknown model: cost %v over %d calls, want unknown over 1", cost, tot.Calls)
	}

	for _, tc := range []struct{ mode, want string }{
		{"blocked", "blocked: SAFETY"},
		{"text", "without an image (finish reason STOP): I cannot draw that."},
		{"error", "API key not valid"},
	} {
		mode = tc.mode
		_, err := other.Execute(t.Context(), map[string]any{"prompt": "x"})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), key) {
			t.Errorf("%s: err = %v, want %q and no key", tc.mode, err, tc.want)
		}
	}
}

// OpenRouter: a chat completion with modalities image+text and usage
// accounting; the images are data URLs in message.images and the cost is
// OpenRouter's own figure. A plain URL is refused rather than fetched; a
// model that answers without an image says so; no cost reported is
// unknown.
func TestOpenRouterImages(t *testing.T) {
	img := tinyPNG(t)
	var mode string
	fake, url := startWire(t, func(path string, body map[string]any) (int, any) {
		imgURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(img)
		if mode == "url" {
			imgURL = "https://example.com/img.png"
		}
		msg := map[string]any{"role": "assistant", "content": "A red dot for you.",
			"images": []any{map[string]any{"type": "image_url", "image_url": map[string]any{"url": imgURL}}}}
		if mode == "text" {
			delete(msg, "images")
		}
		u := map[string]any{"prompt_tokens": 12, "completion_tokens": 1300, "total_tokens": 1312, "cost": 0.0391}
		if mode == "nocost" {
			delete(u, "cost")
		}
		return 200, map[string]any{"id": "gen-1", "object": "chat.completion", "model": body["model"],
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": msg}}, "usage": u}
	})
	led, ledDir := openLedger(t)
	media := t.TempDir()
	tool, err := imagetool.New(imagetool.Options{APIBase: url + "/api/v1", APIKey: key, API: imagetool.APIOpenRouter,
		Provider: "openrouter", Model: "google/gemini-2.5-flash-image", MediaDir: media, Record: usage.ImageRecorder(led, nil)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tool.Execute(t.Context(), map[string]any{"prompt": "a red dot", "n": 2})
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if n := len(savedImages(t, res, media, img)); n != 2 {
		t.Errorf("%d images, want 2", n)
	}
	want := map[string]any{"model": "google/gemini-2.5-flash-image", "messages": []any{map[string]any{"role": "user", "content": "a red dot"}},
		"modalities": []any{"image", "text"}, "usage": map[string]any{"include": true}, "image_config": map[string]any{"aspect_ratio": "1:1"}}
	if fake.paths[0] != "/api/v1/chat/completions" || fake.headers[0].Get("Authorization") != "Bearer "+key {
		t.Errorf("request to %s with auth %q", fake.paths[0], fake.headers[0].Get("Authorization"))
	}
	if diff := cmp.Diff(want, fake.bodies[0]); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	if cost, tot := ledgerCost(t, ledDir); !near(cost, 0.0782) || tot.Output != 2600 {
		t.Errorf("ledger %+v cost %v, want OpenRouter's $0.0782", tot, cost)
	}

	for _, tc := range []struct{ mode, want string }{
		{"url", "does not fetch URLs"},
		{"text", "without an image (is google/gemini-2.5-flash-image an image model?): A red dot for you."},
	} {
		mode = tc.mode
		if _, err := tool.Execute(t.Context(), map[string]any{"prompt": "x"}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.mode, err, tc.want)
		}
	}

	mode = "nocost"
	noCostLed, noCostDir := openLedger(t)
	nc, _ := imagetool.New(imagetool.Options{APIBase: url + "/api/v1", APIKey: key, API: imagetool.APIOpenRouter,
		Provider: "openrouter", Model: "google/gemini-2.5-flash-image", MediaDir: media, Record: usage.ImageRecorder(noCostLed, nil)})
	if _, err := nc.Execute(t.Context(), map[string]any{"prompt": "x"}); err != nil {
		t.Fatal(err)
	}
	if cost, tot := ledgerCost(t, noCostDir); cost != nil || tot.Calls != 1 {
		t.Errorf("no cost reported: ledger cost %v over %d calls, want unknown", cost, tot.Calls)
	}
}

func near(got *float64, want float64) bool {
	return got != nil && math.Abs(*got-want) < 1e-9
}
