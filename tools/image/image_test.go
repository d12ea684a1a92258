package image_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
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
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/tools"
	imagetool "github.com/nanobot-go/nanobot/tools/image"
	"github.com/nanobot-go/nanobot/tools/message"
)

const key = "sk-img-0123456789"

func tinyPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{255, 0, 0, 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// fakeImages is an OpenAI-compatible /v1/images/generations server.
type fakeImages struct {
	mu     sync.Mutex
	bodies []map[string]any
	auth   []string
	status int
	answer func(n int) map[string]any
}

func (f *fakeImages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/images/generations" {
		http.NotFound(w, r)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	status := f.status
	f.mu.Unlock()
	if status != 0 {
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached for images","type":"rate_limit_exceeded"}}`)
		return
	}
	n, _ := body["n"].(float64)
	_ = json.NewEncoder(w).Encode(f.answer(int(n)))
}

func newFake(t *testing.T, img []byte) (*fakeImages, string) {
	f := &fakeImages{answer: func(n int) map[string]any {
		var data []any
		for range n {
			data = append(data, map[string]any{"b64_json": base64.StdEncoding.EncodeToString(img), "revised_prompt": "a red dot, centred"})
		}
		return map[string]any{"created": time.Now().Unix(), "data": data,
			"usage": map[string]any{"input_tokens": 20, "output_tokens": 4000, "total_tokens": 4020}}
	}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL + "/v1"
}

func openLedger(t *testing.T) (*usage.Ledger, string) {
	dir := t.TempDir()
	led, err := usage.Open(t.Context(), dir, usage.Options{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	return led, dir
}

type outbox struct {
	mu  sync.Mutex
	got []bus.Outbound
}

func (o *outbox) PublishOutbound(_ context.Context, m bus.Outbound) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, m)
	return nil
}

// Two images are generated, saved 0600 under media/generated, recorded in
// the ledger as one image record with the token cost, and the message tool
// (workspace-restricted) sends them by the returned paths.
func TestGenerateSaveRecordAndSend(t *testing.T) {
	pngData := tinyPNG(t)
	fake, base := newFake(t, pngData)
	led, ledDir := openLedger(t)
	media := t.TempDir()
	tool, err := imagetool.New(imagetool.Options{APIBase: base, APIKey: key, Provider: "openai", MediaDir: media, Record: usage.ImageRecorder(led, nil)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := tools.WithCallContext(t.Context(), tools.CallContext{Channel: "telegram", ChatID: "42", SessionKey: "telegram:42", SenderID: "7", Source: "user"})
	res, err := tool.Execute(ctx, map[string]any{"prompt": "a red dot", "size": "1536x1024", "n": 2})
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	want := map[string]any{"model": "gpt-image-1", "prompt": "a red dot", "n": float64(2), "size": "1536x1024"}
	if diff := cmp.Diff(want, fake.bodies[0]); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	if fake.auth[0] != "Bearer "+key {
		t.Errorf("auth = %q", fake.auth[0])
	}
	var paths []string
	for line := range strings.SplitSeq(res.Content, "\n") {
		if p, ok := strings.CutPrefix(line, "- "); ok {
			paths = append(paths, p)
		}
	}
	if len(paths) != 2 || !strings.Contains(res.Content, "a red dot, centred") {
		t.Fatalf("result = %q, want two paths and the revised prompt", res.Content)
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o600 || filepath.Dir(p) != filepath.Join(media, "generated") || filepath.Ext(p) != ".png" {
			t.Fatalf("saved %s: %v %v", p, st, err)
		}
		if got, _ := os.ReadFile(p); !bytes.Equal(got, pngData) {
			t.Errorf("%s does not hold the server's image", p)
		}
	}

	sum, err := usage.Summarize(t.Context(), ledDir, time.UTC, usage.Filter{}, usage.GroupModel)
	if err != nil {
		t.Fatal(err)
	}
	cost := sum.Total.Cost()
	wantCost := (20*5 + 4000*40) / 1e6
	if cost == nil || *cost != wantCost || sum.Total.Output != 4000 {
		t.Errorf("ledger total = %+v cost %v, want 4000 output tokens costing $%v", sum.Total, cost, wantCost)
	}
	lines, _ := filepath.Glob(filepath.Join(ledDir, "*.jsonl"))
	raw, _ := os.ReadFile(lines[0])
	if !strings.Contains(string(raw), `"kind":"image"`) || !strings.Contains(string(raw), `"session":"telegram:42"`) {
		t.Errorf("ledger line = %s, want kind image and the session", raw)
	}

	// The message tool, restricted to a workspace the images are not in,
	// still sends them: they come from nanobot's own folder.
	out := &outbox{}
	msg := message.New(out, message.Options{Workspace: t.TempDir(), Restrict: true, MediaDir: media,
		OwnDirs: []string{filepath.Join(media, imagetool.GeneratedDir)}})
	if _, err := msg.Execute(ctx, map[string]any{"content": "here", "files": []any{paths[0], paths[1]}}); err != nil {
		t.Fatalf("message: %v", err)
	}
	if len(out.got) != 1 || len(out.got[0].Media) != 2 || out.got[0].Media[0].Path != paths[0] || out.got[0].Media[0].MIMEType != "image/png" {
		t.Errorf("sent = %+v", out.got)
	}
	// Its other files stay out of reach.
	if _, err := msg.Execute(ctx, map[string]any{"content": "x", "files": []any{filepath.Join(media, "generated", "..", "secret.txt")}}); err == nil {
		t.Error("a file outside the generated folder was sent")
	}
}

func TestOwnDirRefusesSymlinkOut(t *testing.T) {
	media := t.TempDir()
	gen := filepath.Join(media, imagetool.GeneratedDir)
	os.MkdirAll(gen, 0o700)
	secret := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(secret, []byte("s3cret"), 0o600)
	if err := os.Symlink(secret, filepath.Join(gen, "img.png")); err != nil {
		t.Fatal(err)
	}
	msg := message.New(&outbox{}, message.Options{Workspace: t.TempDir(), Restrict: true, MediaDir: media, OwnDirs: []string{gen}})
	_, err := msg.Execute(t.Context(), map[string]any{"content": "x", "files": []any{filepath.Join(gen, "img.png")}})
	if err == nil {
		t.Fatal("a symbolic link out of the generated folder was followed")
	}
}

func TestGenerateErrors(t *testing.T) {
	led, ledDir := openLedger(t)
	fake, base := newFake(t, []byte("not an image"))
	tool, _ := imagetool.New(imagetool.Options{APIBase: base, APIKey: key, Provider: "openai", Model: "dall-e-3", MediaDir: t.TempDir(), Record: usage.ImageRecorder(led, nil)})

	_, err := tool.Execute(t.Context(), map[string]any{"prompt": "x"})
	if err == nil || !strings.Contains(err.Error(), "not PNG") {
		t.Errorf("non-image answer: err = %v", err)
	}
	if got := fake.bodies[0]["response_format"]; got != "b64_json" {
		t.Errorf("dall-e request response_format = %v, want b64_json", got)
	}

	fake.status = http.StatusTooManyRequests
	_, err = tool.Execute(t.Context(), map[string]any{"prompt": "x"})
	if err == nil || !strings.Contains(err.Error(), "429") || !strings.Contains(err.Error(), "Rate limit reached") || strings.Contains(err.Error(), key) {
		t.Errorf("429: err = %v, want the status and the vendor's message without the key", err)
	}
	sum, err := usage.Summarize(t.Context(), ledDir, time.UTC, usage.Filter{}, usage.GroupModel)
	if err != nil {
		t.Fatal(err)
	}
	// dall-e-3 1024x1024 is $0.04 an image; the failed call costs nothing.
	if c := sum.Total.Cost(); c == nil || *c != 0.04 || sum.Total.Errors != 1 {
		t.Errorf("ledger = %+v (cost %v), want $0.04 and one error", sum.Total, c)
	}
}
