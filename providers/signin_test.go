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
