package backends_test

import (
	"net/http"
	"testing"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// The Codex endpoint takes only streamed requests without
// max_output_tokens or temperature: Chat goes through a stream and the
// two are left out; other Responses providers keep them.
func TestCodexRequestShape(t *testing.T) {
	srv := providertest.New(t)
	srv.Handle(func(providertest.Request) providertest.Reply { return providertest.Reply{Text: "ok"} })
	temp := 0.3
	req := providers.ChatRequest{Model: "gpt-5-codex", MaxTokens: 4096, Temperature: &temp,
		Messages: []providers.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}}

	hook := func(_ providers.Resolution, base *http.Client) (*http.Client, error) { return base, nil }
	res, err := providers.Resolve("openai-codex/gpt-5-codex", "", map[string]providers.Settings{"openai-codex": {SignedIn: true, APIBase: srv.OpenAIBase()}})
	if err != nil {
		t.Fatal(err)
	}
	opts := options(srv)
	opts.SignIn = hook
	p, err := providers.New(res, opts)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Chat(t.Context(), req)
	if err != nil || resp.Content != "ok" {
		t.Fatalf("Chat = %+v, %v", resp, err)
	}
	if _, err := p.Stream(t.Context(), req, nil); err != nil {
		t.Fatalf("Stream with no callback: %v", err)
	}

	// A model that takes a temperature (OpenAI's reasoning models refuse one).
	req.Model = "gpt-4.1"
	res, err = providers.Resolve("gpt-4.1", "openai", map[string]providers.Settings{"openai": {APIKey: "sk-123456", APIBase: srv.OpenAIBase(), API: "responses"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err = providers.New(res, options(srv))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Chat(t.Context(), req); err != nil {
		t.Fatal(err)
	}

	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for i, r := range reqs[:2] {
		if !r.Stream || r.Body["max_output_tokens"] != nil || r.Body["temperature"] != nil || r.Body["store"] != false || r.Body["instructions"] != "be brief" {
			t.Errorf("codex request %d: stream %v, max_output_tokens %v, temperature %v, store %v, instructions %v",
				i, r.Stream, r.Body["max_output_tokens"], r.Body["temperature"], r.Body["store"], r.Body["instructions"])
		}
	}
	if r := reqs[2]; r.Stream || r.Body["max_output_tokens"] != float64(4096) || r.Body["temperature"] != 0.3 {
		t.Errorf("openai responses request: stream %v, max_output_tokens %v, temperature %v: want them kept", r.Stream, r.Body["max_output_tokens"], r.Body["temperature"])
	}
}
