package backends_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// scripted answers requests with replies in turn and notes when each
// request arrived.
type scripted struct {
	mu      sync.Mutex
	replies []providertest.Reply
	arrived []time.Time
}

func (s *scripted) handle(providertest.Request) providertest.Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.arrived = append(s.arrived, time.Now())
	return s.replies[min(len(s.arrived), len(s.replies))-1]
}

func (s *scripted) gap(i int) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.arrived[i].Sub(s.arrived[i-1])
}

// The limiter learns from the headers of real responses, through both
// backends' HTTP stacks, streaming or not: nothing is sent to the vendor
// before the time it named.
func TestRateLimitLearnsFromResponseHeaders(t *testing.T) {
	const hold = 400 * time.Millisecond
	tests := []struct {
		name     string
		provider string
		settings func(*providertest.Server) providers.Settings
		model    string
		stream   bool
		first    func() providertest.Reply
		wantErr  bool
	}{
		{
			name: "openai remaining requests", provider: "openai", model: "gpt-4o",
			settings: func(s *providertest.Server) providers.Settings {
				return providers.Settings{APIKey: "sk-test-123456", APIBase: s.OpenAIBase()}
			},
			first: func() providertest.Reply {
				return providertest.Reply{Text: "one", Header: map[string]string{
					"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "400ms",
					"x-ratelimit-remaining-tokens": "90000", "x-ratelimit-reset-tokens": "1ms"}}
			},
		},
		{
			name: "openai 429 retry-after, streaming", provider: "openai", model: "gpt-4o", stream: true, wantErr: true,
			settings: func(s *providertest.Server) providers.Settings {
				return providers.Settings{APIKey: "sk-test-123456", APIBase: s.OpenAIBase()}
			},
			first: func() providertest.Reply {
				return providertest.Reply{Status: http.StatusTooManyRequests, Header: map[string]string{"retry-after-ms": "400"}}
			},
		},
		{
			name: "anthropic remaining tokens", provider: "anthropic", model: "claude-sonnet-4", stream: true,
			settings: func(s *providertest.Server) providers.Settings {
				return providers.Settings{APIKey: "sk-ant-123456", APIBase: s.AnthropicBase()}
			},
			first: func() providertest.Reply {
				return providertest.Reply{Text: "one", Header: map[string]string{
					"anthropic-ratelimit-tokens-remaining": "10",
					"anthropic-ratelimit-tokens-reset":     time.Now().Add(hold).UTC().Format(time.RFC3339Nano)}}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.New(t)
			script := &scripted{replies: []providertest.Reply{tt.first(), {Text: "two"}}}
			srv.Handle(script.handle)
			res, err := providers.Resolve(tt.model, tt.provider, map[string]providers.Settings{tt.provider: tt.settings(srv)})
			if err != nil {
				t.Fatal(err)
			}
			opts := options(srv)
			opts.RateLimits = providers.NewRateLimiters(nil) // nothing configured: headers only
			p, err := providers.New(res, opts)
			if err != nil {
				t.Fatal(err)
			}
			req := providers.ChatRequest{Model: tt.model, Messages: []providers.Message{{Role: "user", Content: "hi"}}, MaxTokens: 100}
			call := func(ctx context.Context, onWait func(time.Duration)) error {
				req := req
				req.OnWait = onWait
				if tt.stream {
					_, err := p.Stream(ctx, req, nil)
					return err
				}
				_, err := p.Chat(ctx, req)
				return err
			}
			if err := call(t.Context(), nil); (err != nil) != tt.wantErr {
				t.Fatalf("first call: err = %v, want error %v", err, tt.wantErr)
			}
			waited := false
			if err := call(t.Context(), func(time.Duration) { waited = true }); err != nil {
				t.Fatalf("second call: %v", err)
			}
			if gap := script.gap(1); gap < hold-50*time.Millisecond {
				t.Errorf("second request arrived %v after the first, want at least %v", gap, hold)
			}
			if !waited {
				t.Error("the wait was not reported")
			}
		})
	}
}
