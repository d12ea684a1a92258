package providers

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestSignInProvidersResolve(t *testing.T) {
	signedIn := map[string]Settings{"github-copilot": {SignedIn: true}}
	for _, tc := range []struct {
		name, model, forced string
		cfg                 map[string]Settings
		want, wantModel     string
		wantErr             string
	}{
		{name: "prefix", model: "github-copilot/gpt-4o", cfg: signedIn, want: "github-copilot", wantModel: "gpt-4o"},
		{name: "forced, camelCase key", model: "claude-sonnet-4", forced: "githubCopilot", cfg: map[string]Settings{"githubCopilot": {SignedIn: true}}, want: "github-copilot", wantModel: "claude-sonnet-4"},
		{name: "only sign-in is the fallback", model: "gpt-4o", cfg: signedIn, want: "github-copilot", wantModel: "gpt-4o"},
		{name: "an API key wins the fallback", model: "some-model", cfg: map[string]Settings{"github-copilot": {SignedIn: true}, "deepseek": {APIKey: "sk-x"}}, want: "deepseek"},
		{name: "forced but signed out", model: "gpt-5", forced: "openai-codex", cfg: map[string]Settings{}, wantErr: "run `nanobot provider login openai-codex`"},
		{name: "prefix but signed out", model: "openai-codex/gpt-5", cfg: map[string]Settings{"openai-codex": {APIKey: "ignored"}}, wantErr: "no provider configured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Resolve(tc.model, tc.forced, tc.cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Provider != tc.want || tc.wantModel != "" && res.Model != tc.wantModel {
				t.Errorf("got %s %q, want %s %q", res.Provider, res.Model, tc.want, tc.wantModel)
			}
		})
	}
}

func TestNewSignInProviderNeedsHook(t *testing.T) {
	res, err := Resolve("github-copilot/gpt-4o", "", map[string]Settings{"github-copilot": {SignedIn: true}})
	if err != nil {
		t.Fatal(err)
	}
	var built bool
	backends := map[string]BackendFunc{BackendOpenAICompat: func(_ Resolution, o Options) (Provider, error) {
		built = o.HTTPClient != nil && o.HTTPClient.Transport == hookTransport{}
		return Unconfigured{}, nil
	}}
	if _, err := New(res, Options{Backends: backends}); err == nil {
		t.Fatal("New without a SignIn hook built a sign-in provider")
	}
	hook := func(Resolution, *http.Client) (*http.Client, error) {
		return &http.Client{Transport: hookTransport{}}, nil
	}
	if _, err := New(res, Options{Backends: backends, SignIn: hook}); err != nil || !built {
		t.Fatalf("New with the hook: err %v, backend got the hook's client: %v", err, built)
	}
}

type hookTransport struct{}

func (hookTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("unused")
}

func TestSignInErrorMessage(t *testing.T) {
	err := fmt.Errorf("model x: %w", &Error{Provider: "github-copilot", Err: &SignInError{Provider: "github-copilot", Reason: "signed out"}})
	var se *SignInError
	if !errors.As(err, &se) || IsTransient(err) {
		t.Fatalf("errors.As = %v, transient = %v", se, IsTransient(err))
	}
	if got, want := se.Error(), "github-copilot: signed out — run `nanobot provider login github-copilot`"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestXAIGrokResolves: nanobot's providers.xaiGrok is the Grok
// subscription sign-in when it has no apiKey, and xAI's API when it has
// one (as before the sign-in existed), under every spelling.
func TestXAIGrokResolves(t *testing.T) {
	for _, tc := range []struct {
		name, model, forced string
		cfg                 map[string]Settings
		want, wantModel     string
		wantBase, wantKey   string
		wantErr             []string
	}{
		{name: "signed in, prefix", model: "xai-grok/grok-4.5", cfg: map[string]Settings{"xaiGrok": {SignedIn: true}},
			want: "xai-grok", wantModel: "grok-4.5", wantBase: "https://cli-chat-proxy.grok.com/v1"},
		{name: "signed in, snake_case prefix", model: "xai_grok/grok-4.5", cfg: map[string]Settings{"xai_grok": {SignedIn: true}},
			want: "xai-grok", wantModel: "grok-4.5"},
		{name: "signed in, forced", model: "grok-4.5", forced: "xaiGrok", cfg: map[string]Settings{"xai-grok": {SignedIn: true}},
			want: "xai-grok", wantModel: "grok-4.5"},
		{name: "signed in, bare Grok model", model: "grok-4.5", cfg: map[string]Settings{"github-copilot": {SignedIn: true}, "xaiGrok": {SignedIn: true}},
			want: "xai-grok", wantModel: "grok-4.5"},
		{name: "apiBase for a test proxy keeps the sign-in", model: "xai-grok/grok-4.5", cfg: map[string]Settings{"xaiGrok": {SignedIn: true, APIBase: "http://127.0.0.1:9/v1"}},
			want: "xai-grok", wantBase: "http://127.0.0.1:9/v1"},
		{name: "an apiKey makes it xAI's API, even signed in", model: "xai-grok/grok-4", cfg: map[string]Settings{"xaiGrok": {APIKey: "xai-key-1", SignedIn: true}},
			want: "xai", wantModel: "grok-4", wantBase: "https://api.x.ai/v1", wantKey: "xai-key-1"},
		{name: "an apiKey, forced", model: "grok-4", forced: "xai_grok", cfg: map[string]Settings{"xai_grok": {APIKey: "xai-key-1"}},
			want: "xai", wantModel: "grok-4", wantKey: "xai-key-1"},
		{name: "an apiKey, bare model", model: "grok-4", cfg: map[string]Settings{"xaiGrok": {APIKey: "xai-key-1"}},
			want: "xai", wantModel: "grok-4", wantKey: "xai-key-1"},
		{name: "providers.xai's own key wins", model: "grok-4", cfg: map[string]Settings{"xai": {APIKey: "own-key"}, "xaiGrok": {APIKey: "grok-key"}},
			want: "xai", wantKey: "own-key"},
		{name: "neither signed in nor keyed", model: "grok-4", forced: "xaiGrok", cfg: map[string]Settings{"xaiGrok": {}},
			wantErr: []string{"run `nanobot provider login xai-grok`", "providers.xai-grok.apiKey"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Resolve(tc.model, tc.forced, tc.cfg)
			if tc.wantErr != nil {
				for _, w := range tc.wantErr {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("err = %v, want %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Provider != tc.want || tc.wantModel != "" && res.Model != tc.wantModel ||
				tc.wantBase != "" && res.APIBase != tc.wantBase || tc.wantKey != "" && res.APIKey != tc.wantKey {
				t.Errorf("got %s %q at %s (key set %v), want %s %q at %s", res.Provider, res.Model, res.APIBase, res.APIKey != "", tc.want, tc.wantModel, tc.wantBase)
			}
		})
	}
}
