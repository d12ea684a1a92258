package providers_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

func TestFallbackChain(t *testing.T) {
	tests := []struct {
		name        string
		primary     []providertest.Reply
		secondary   []providertest.Reply
		wantModel   string
		wantErr     bool
		wantPrimary int // requests to the primary
		wantSecond  int
	}{
		{name: "primary answers", primary: []providertest.Reply{{Text: "ok"}},
			wantModel: "primary-model", wantPrimary: 1},
		{name: "auth error falls back", primary: []providertest.Reply{{Status: 401}}, secondary: []providertest.Reply{{Text: "ok"}},
			wantModel: "backup-model", wantPrimary: 1, wantSecond: 1},
		{name: "transient errors exhaust retries, then fall back",
			primary:   []providertest.Reply{{Status: 503}, {Status: 503}, {Status: 503}, {Status: 503}},
			secondary: []providertest.Reply{{Text: "ok"}},
			wantModel: "backup-model", wantPrimary: 4, wantSecond: 1},
		{name: "all fail", primary: []providertest.Reply{{Status: 400}}, secondary: []providertest.Reply{{Status: 404}},
			wantErr: true, wantPrimary: 1, wantSecond: 1},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(tt.name+map[bool]string{false: "/chat", true: "/stream"}[stream], func(t *testing.T) {
				a, b := providertest.New(t), providertest.New(t)
				a.Push(tt.primary...)
				b.Push(tt.secondary...)
				f := providers.NewFallback(nil,
					providers.Candidate{Model: "primary-model", Provider: retrying(t, a, &waits{})},
					providers.Candidate{Model: "backup-model", Provider: retrying(t, b, &waits{})},
				)
				var (
					resp *providers.LLMResponse
					err  error
				)
				if stream {
					resp, err = f.Stream(t.Context(), textReq(), func(providers.Delta) {})
				} else {
					resp, err = f.Chat(t.Context(), textReq())
				}
				if got := len(a.Requests()); got != tt.wantPrimary {
					t.Errorf("primary requests = %d, want %d", got, tt.wantPrimary)
				}
				if got := len(b.Requests()); got != tt.wantSecond {
					t.Errorf("backup requests = %d, want %d", got, tt.wantSecond)
				}
				if tt.wantErr {
					if err == nil {
						t.Fatal("want error")
					}
					if !strings.Contains(err.Error(), "primary-model") || !strings.Contains(err.Error(), "backup-model") {
						t.Errorf("error %q does not name both models", err)
					}
					var pe *providers.Error
					if !errors.As(err, &pe) {
						t.Errorf("error chain has no *providers.Error: %v", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if resp.Model != tt.wantModel {
					t.Errorf("Model = %q, want %q", resp.Model, tt.wantModel)
				}
				if b.Requests() != nil && tt.wantSecond > 0 && b.Requests()[0].Model != "backup-model" {
					t.Errorf("backup was asked for model %q", b.Requests()[0].Model)
				}
			})
		}
	}
}

func TestFallbackStopsOnCancel(t *testing.T) {
	a, b := providertest.New(t), providertest.New(t)
	a.Push(providertest.Reply{Text: "never", Chunks: 3, StallAfter: 2})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f := providers.NewFallback(nil,
		providers.Candidate{Model: "a", Provider: backend(t, a)},
		providers.Candidate{Model: "b", Provider: backend(t, b)},
	)
	_, err := f.Stream(ctx, textReq(), func(providers.Delta) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := len(b.Requests()); n != 0 {
		t.Errorf("fallback asked after cancellation (%d requests)", n)
	}
}

func TestFallbackNotAfterDeltas(t *testing.T) {
	a, b := providertest.New(t), providertest.New(t)
	a.Push(providertest.Reply{Text: "partial answer here", Chunks: 4, DropAfter: 3})
	b.Push(providertest.Reply{Text: "fresh answer"})
	f := providers.NewFallback(nil,
		providers.Candidate{Model: "a", Provider: backend(t, a)},
		providers.Candidate{Model: "b", Provider: backend(t, b)},
	)
	if _, err := f.Stream(t.Context(), textReq(), func(providers.Delta) {}); err == nil {
		t.Fatal("want the primary's error")
	}
	if n := len(b.Requests()); n != 0 {
		t.Errorf("fallback restarted an answer already shown (%d requests)", n)
	}
}

func TestFallbackEmpty(t *testing.T) {
	if _, err := providers.NewFallback(nil).Chat(t.Context(), textReq()); err == nil {
		t.Fatal("want error for an empty chain")
	}
}
