package agent

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/nanobot-go/nanobot/configs"
)

// The image model's provider picks generate_image's wire format: gemini's
// native API (from the registry's OpenAI-compatible apiBase), OpenRouter's
// chat completions, OpenAI's /images/generations otherwise.
func TestImageToolFollowsProvider(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")
	b64 := base64.StdEncoding.EncodeToString(png)
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		var ans any
		switch r.URL.Path {
		case "/gemini/v1beta/models/gemini-2.5-flash-image:generateContent":
			ans = map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"parts": []any{
				map[string]any{"inlineData": map[string]any{"mimeType": "image/png", "data": b64}}}}}}}
		case "/openrouter/chat/completions":
			ans = map[string]any{"choices": []any{map[string]any{"message": map[string]any{
				"images": []any{map[string]any{"image_url": map[string]any{"url": "data:image/png;base64," + b64}}}}}}}
		case "/openai/images/generations":
			ans = map[string]any{"data": []any{map[string]any{"b64_json": b64}}}
		default:
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(ans)
	}))
	t.Cleanup(srv.Close)

	for _, tc := range []struct {
		name, provider, model, want string
	}{
		{"gemini by prefix", "", "gemini/gemini-2.5-flash-image", "/gemini/v1beta/models/gemini-2.5-flash-image:generateContent"},
		{"openrouter by name", "openrouter", "google/gemini-2.5-flash-image", "/openrouter/chat/completions"},
		{"openai by default", "", "gpt-image-1", "/openai/images/generations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &configs.Config{Providers: map[string]configs.ProviderConfig{
				"gemini":     {APIKey: "g", APIBase: srv.URL + "/gemini/v1beta/openai"},
				"openrouter": {APIKey: "o", APIBase: srv.URL + "/openrouter"},
				"openai":     {APIKey: "k", APIBase: srv.URL + "/openai"},
			}}
			cfg.Tools.Image = configs.ImageToolConfig{Enabled: true, Provider: tc.provider, Model: tc.model}
			tool, err := imageTool(cfg, configs.Paths{Media: t.TempDir()}, Deps{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			paths = nil
			mu.Unlock()
			if _, err := tool.Execute(t.Context(), map[string]any{"prompt": "a dot"}); err != nil {
				t.Fatalf("Execute: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(paths) != 1 || paths[0] != tc.want {
				t.Errorf("requests %q, want one to %s", paths, tc.want)
			}
		})
	}
}
