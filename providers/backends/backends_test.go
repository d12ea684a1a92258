package backends_test

import (
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/backends"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

func options(srv *providertest.Server) providers.Options {
	return providers.Options{Backends: backends.All(), HTTPClient: srv.Client(), NoRetry: true}
}

func TestNewSendsTheResolvedModel(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "one"}, providertest.Reply{Text: "two"}, providertest.Reply{Text: "three"})
	res, err := providers.Resolve("openrouter/anthropic/claude-3.5", "", map[string]providers.Settings{
		"openrouter": {APIKey: "sk-or-123456", APIBase: srv.OpenAIBase(), ExtraHeaders: map[string]string{"X-Title": "nanobot"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := providers.New(res, options(srv))
	if err != nil {
		t.Fatal(err)
	}
	msgs := []providers.Message{{Role: "user", Content: "hi"}}
	for _, model := range []string{"openrouter/anthropic/claude-3.5", "", "openai/gpt-4o"} {
		if _, err := p.Chat(t.Context(), providers.ChatRequest{Model: model, Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	for i, want := range []string{"anthropic/claude-3.5", "anthropic/claude-3.5", "openai/gpt-4o"} {
		if reqs[i].Model != want {
			t.Errorf("request %d model = %q, want %q", i, reqs[i].Model, want)
		}
	}
	if reqs[0].Header.Get("X-Title") != "nanobot" || reqs[0].Header.Get("Authorization") != "Bearer sk-or-123456" {
		t.Errorf("headers: %v", reqs[0].Header)
	}
}

func TestEveryBackend(t *testing.T) {
	srv := providertest.New(t)
	tests := []struct {
		provider string
		settings providers.Settings
		model    string
		wantPath string
	}{
		{provider: "deepseek", settings: providers.Settings{APIKey: "sk-ds-123456", APIBase: srv.OpenAIBase()}, model: "deepseek-chat", wantPath: "/v1/chat/completions"},
		{provider: "anthropic", settings: providers.Settings{APIKey: "sk-ant-123456", APIBase: srv.AnthropicBase()}, model: "claude-sonnet-4", wantPath: "/v1/messages"},
		{provider: "azure_openai", settings: providers.Settings{APIKey: "az-123456", APIBase: srv.URL}, model: "gpt-4o-deploy", wantPath: "/openai/deployments/gpt-4o-deploy/chat/completions"},
		{provider: "ollama", settings: providers.Settings{APIBase: srv.OpenAIBase()}, model: "ollama/llama3.2", wantPath: "/v1/chat/completions"},
		{provider: "openai", settings: providers.Settings{APIKey: "sk-123456", APIBase: srv.OpenAIBase(), API: providers.APIResponses}, model: "gpt-5", wantPath: "/v1/responses"},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			srv.Push(providertest.Reply{Text: "hello from " + tt.provider})
			res, err := providers.Resolve(tt.model, "", map[string]providers.Settings{tt.provider: tt.settings})
			if err != nil {
				t.Fatal(err)
			}
			opts := options(srv)
			if tt.provider == "azure_openai" {
				opts.HTTPClient = nil // Azure refuses plain HTTP except through its own loopback transport
			}
			p, err := providers.New(res, opts)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := p.Stream(t.Context(), providers.ChatRequest{Messages: []providers.Message{{Role: "user", Content: "hi"}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Content != "hello from "+tt.provider {
				t.Errorf("content = %q", resp.Content)
			}
			reqs := srv.Requests()
			if got := reqs[len(reqs)-1].Path; got != tt.wantPath {
				t.Errorf("path = %q, want %q", got, tt.wantPath)
			}
		})
	}
}

func TestNewChainFallsBack(t *testing.T) {
	primary, backup := providertest.New(t), providertest.New(t)
	primary.Push(providertest.Reply{Status: 401})
	backup.Push(providertest.Reply{Text: "backup here"})
	configured := map[string]providers.Settings{
		"anthropic": {APIKey: "sk-ant-123456", APIBase: primary.AnthropicBase()},
		"deepseek":  {APIKey: "sk-ds-123456", APIBase: backup.OpenAIBase()},
	}
	opts := providers.Options{Backends: backends.All()}
	p, ress, err := providers.NewChain("claude-sonnet-4", []string{"deepseek/deepseek-chat"}, "", configured, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(ress) != 2 || ress[0].Provider != "anthropic" || ress[1].Provider != "deepseek" || ress[1].Model != "deepseek-chat" {
		t.Fatalf("resolutions: %+v", ress)
	}
	resp, err := p.Chat(t.Context(), providers.ChatRequest{Messages: []providers.Message{{Role: "user", Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "backup here" || resp.Model != "deepseek-chat" {
		t.Errorf("resp %q from %q", resp.Content, resp.Model)
	}
}

func TestNewErrors(t *testing.T) {
	res, err := providers.Resolve("gpt-4o", "", map[string]providers.Settings{"openai": {APIKey: "sk-123456"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := providers.New(res, providers.Options{}); err == nil {
		t.Error("New without backends succeeded")
	}
	res.APIBase = "::not a url"
	if _, err := providers.New(res, providers.Options{Backends: backends.All()}); err == nil {
		t.Error("New with a broken apiBase succeeded")
	}
}

func TestResponsesAPIOnlyForOpenAICompatible(t *testing.T) {
	for _, tt := range []struct {
		provider, model, api, want string
	}{
		{"anthropic", "claude-sonnet-4", providers.APIResponses, `api "responses" needs an OpenAI-compatible provider`},
		{"deepseek", "deepseek-chat", "graphql", `unknown api "graphql"`},
	} {
		res, err := providers.Resolve(tt.model, "", map[string]providers.Settings{tt.provider: {APIKey: "k-123456", API: tt.api}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = providers.New(res, providers.Options{Backends: backends.All()})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s with api %q: err = %v, want %q", tt.provider, tt.api, err, tt.want)
		}
	}
}
