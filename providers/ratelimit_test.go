package providers

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// recordingProvider notes when each call reached it (the bubble's clock).
type recordingProvider struct {
	mu    sync.Mutex
	start time.Time
	at    []time.Duration
	usage Usage
}

func (p *recordingProvider) Chat(ctx context.Context, req ChatRequest) (*LLMResponse, error) {
	p.mu.Lock()
	p.at = append(p.at, time.Since(p.start))
	p.mu.Unlock()
	return &LLMResponse{Content: "ok", Usage: p.usage}, nil
}

func (p *recordingProvider) Stream(ctx context.Context, req ChatRequest, _ func(Delta)) (*LLMResponse, error) {
	return p.Chat(ctx, req)
}

func (p *recordingProvider) times() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := slices.Clone(p.at)
	slices.Sort(out)
	return out
}

func hi(model string) ChatRequest {
	return ChatRequest{Model: model, Messages: []Message{{Role: RoleUser, Content: "hi"}}, MaxTokens: 1000}
}

// 100 requests at once at rpm 60 go one a second, in order of asking, and
// every one that waited was told so (typing), none failed.
func TestRPMSpreadsABurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recordingProvider{start: time.Now()}
		lim := NewRateLimiters(map[string]RateLimitConfig{"openai": {RateLimit: RateLimit{RPM: 60}}}).For("openai")
		p := lim.Wrap(rec)
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			noticed int
		)
		for range 100 {
			wg.Go(func() {
				told := false
				req := hi("gpt-4o")
				req.OnWait = func(time.Duration) {
					if !told {
						told = true
						mu.Lock()
						noticed++
						mu.Unlock()
					}
				}
				if _, err := p.Chat(t.Context(), req); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		got := rec.times()
		for i, at := range got {
			if want := time.Duration(i) * time.Second; at != want {
				t.Fatalf("request %d went at %v, want %v (all: %v)", i, at, want, got)
			}
		}
		if len(got) != 100 {
			t.Fatalf("%d requests made, want 100", len(got))
		}
		if noticed != 99 {
			t.Errorf("%d callers were told they wait, want 99", noticed)
		}
	})
}

// A per-model limit holds that model only; the provider-wide one holds all.
func TestRateLimitPerModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recordingProvider{start: time.Now()}
		lim := NewRateLimiters(map[string]RateLimitConfig{"openai": {Models: map[string]RateLimit{"slow": {RPM: 2}}}}).For("openai")
		p := lim.Wrap(rec)
		for _, m := range []string{"slow", "slow", "fast", "fast", "fast"} {
			if _, err := p.Chat(t.Context(), hi(m)); err != nil {
				t.Fatal(err)
			}
		}
		want := []time.Duration{0, 30 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second}
		if got := rec.times(); !slices.Equal(got, want) {
			t.Errorf("went at %v, want %v", got, want)
		}
	})
}

// TPM: a call takes its estimate; when the provider reports less, the
// rest is given back.
func TestTPM(t *testing.T) {
	est := EstimateRequestTokens(hi("m")) // 1004
	synctest.Test(t, func(t *testing.T) {
		rec := &recordingProvider{start: time.Now()}
		p := NewRateLimiters(map[string]RateLimitConfig{"x": {RateLimit: RateLimit{TPM: 6000}}}).For("x").Wrap(rec)
		var wg sync.WaitGroup
		for range 7 {
			wg.Go(func() { _, _ = p.Chat(t.Context(), hi("m")) })
		}
		wg.Wait()
		got := rec.times()
		// 6000 a minute is 100 a second; call k goes once (k+1)*est-6000 has refilled.
		for k, at := range got {
			want := time.Duration(max(0, int64(k+1)*est-6000)) * 10 * time.Millisecond
			if at != want {
				t.Errorf("call %d went at %v, want %v", k, at, want)
			}
		}
	})
	synctest.Test(t, func(t *testing.T) {
		rec := &recordingProvider{start: time.Now(), usage: Usage{PromptTokens: 5, CompletionTokens: 5}}
		p := NewRateLimiters(map[string]RateLimitConfig{"x": {RateLimit: RateLimit{TPM: 6000}}}).For("x").Wrap(rec)
		for range 20 {
			_, _ = p.Chat(t.Context(), hi("m"))
		}
		if got := rec.times(); got[19] != 0 {
			t.Errorf("calls that used 10 tokens each waited (last at %v): the unused estimate was not given back", got[19])
		}
	})
}

// A 429 with Retry-After pauses that model's calls, queued ones included,
// for the time the vendor asked.
func TestRetryAfterPausesTheBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recordingProvider{start: time.Now()}
		lim := NewRateLimiters(map[string]RateLimitConfig{"openai": {RateLimit: RateLimit{RPM: 60}}}).For("openai")
		p := lim.Wrap(rec)
		if _, err := p.Chat(t.Context(), hi("gpt-4o")); err != nil { // at 0
			t.Fatal(err)
		}
		lim.Observe("gpt-4o", http.StatusTooManyRequests, http.Header{"Retry-After": {"6"}})
		if _, err := p.Chat(t.Context(), hi("other")); err != nil { // not paused; the rpm spaces it
			t.Fatal(err)
		}
		var waits []time.Duration
		req := hi("gpt-4o")
		req.OnWait = func(d time.Duration) { waits = append(waits, d) }
		if _, err := p.Chat(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		want := []time.Duration{0, time.Second, 6 * time.Second}
		if got := rec.times(); !slices.Equal(got, want) {
			t.Errorf("went at %v, want %v", got, want)
		}
		if !slices.Equal(waits, []time.Duration{5 * time.Second, time.Second}) {
			t.Errorf("wait notices %v, want 5s then 1s (repeated every 4s)", waits)
		}
	})
}

// What the vendor says is left, and until when, holds calls back: OpenAI's
// durations and Anthropic's timestamps.
func TestRemainingHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recordingProvider{start: time.Now()}
		lim := NewRateLimiters(nil).For("openai")
		p := lim.Wrap(rec)
		lim.Observe("gpt-4o", 200, http.Header{"X-Ratelimit-Remaining-Requests": {"1"}, "X-Ratelimit-Reset-Requests": {"2s"}})
		for range 2 {
			if _, err := p.Chat(t.Context(), hi("gpt-4o")); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := rec.times(), []time.Duration{0, 2 * time.Second}; !slices.Equal(got, want) {
			t.Errorf("openai: went at %v, want %v", got, want)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		rec := &recordingProvider{start: time.Now()}
		lim := NewRateLimiters(nil).For("anthropic")
		p := lim.Wrap(rec)
		lim.Observe("claude", 200, http.Header{
			"Anthropic-Ratelimit-Tokens-Remaining": {"500"},
			"Anthropic-Ratelimit-Tokens-Reset":     {time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339)},
		})
		if _, err := p.Chat(t.Context(), hi("claude")); err != nil { // ~1004 tokens > 500 left
			t.Fatal(err)
		}
		if got, want := rec.times(), []time.Duration{3 * time.Second}; !slices.Equal(got, want) {
			t.Errorf("anthropic: went at %v, want %v", got, want)
		}
	})
}

// A caller that gives up while waiting gets its context's error, and its
// slot goes to the next caller.
func TestRateLimitWaitCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recordingProvider{start: time.Now()}
		p := NewRateLimiters(map[string]RateLimitConfig{"x": {RateLimit: RateLimit{RPM: 6}}}).For("x").Wrap(rec)
		if _, err := p.Chat(t.Context(), hi("m")); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := p.Chat(ctx, hi("m"))
		if !errors.Is(err, context.DeadlineExceeded) || IsTransient(err) {
			t.Fatalf("err = %v, want the context's error, not retried", err)
		}
		if _, err := p.Chat(t.Context(), hi("m")); err != nil {
			t.Fatal(err)
		}
		if got, want := rec.times(), []time.Duration{0, 10 * time.Second}; !slices.Equal(got, want) {
			t.Errorf("went at %v, want %v", got, want)
		}
	})
}
