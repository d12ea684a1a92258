package providers

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"
)

// BackendFunc builds the raw backend (no retry) for a resolution. The
// backend packages provide them; providers/backends maps every Backend*
// name to one, so this package does not import its backends and cmd stays
// the one place that knows the full list.
type BackendFunc func(res Resolution, opts Options) (Provider, error)

// Options configures New.
type Options struct {
	// Backends maps Backend* names to constructors. Required.
	Backends map[string]BackendFunc
	// HTTPClient overrides the client of every backend (tests, proxies).
	HTTPClient *http.Client
	// RequestTimeout bounds a call, and a stream's wait for its first event.
	// 0 means DefaultRequestTimeout; negative none.
	RequestTimeout time.Duration
	// StreamIdleTimeout fails a stream that delivered nothing for this
	// long. 0 means DefaultStreamIdleTimeout; negative none.
	StreamIdleTimeout time.Duration
	// Retry is the retry policy; nil means the default. Ignored with NoRetry.
	Retry   *RetryPolicy
	NoRetry bool
	// Logger is passed to backends and the retry policy; nil discards.
	Logger *slog.Logger
	// SignIn returns the HTTP client for a sign-in provider's backend
	// (ProviderSpec.SignIn): base (nil: a default client) wrapped so each
	// request carries the signed-in user's current token and the headers
	// the service requires. Required to build a sign-in provider.
	SignIn func(res Resolution, base *http.Client) (*http.Client, error)
	// RateLimits, when set, holds every call back by its provider's
	// limiter (inside the retries, so each attempt is counted) and shows
	// the limiter the responses' rate-limit headers.
	RateLimits *RateLimiters
}

// Default timeouts.
const (
	DefaultRequestTimeout    = 5 * time.Minute
	DefaultStreamIdleTimeout = 90 * time.Second
)

// EffectiveTimeouts applies the defaults: 0 -> default, negative -> 0 (none).
func (o Options) EffectiveTimeouts() (request, idle time.Duration) {
	return effective(o.RequestTimeout, DefaultRequestTimeout), effective(o.StreamIdleTimeout, DefaultStreamIdleTimeout)
}

func effective(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	default:
		return d
	}
}

// New builds the provider for a resolution: the backend for
// res.Spec.Backend, wrapped in the retry policy. A request whose Model is
// empty or the configured name (res.RequestedModel) is sent as res.Model.
func New(res Resolution, opts Options) (Provider, error) {
	backend, err := res.Backend()
	if err != nil {
		return nil, err
	}
	build, ok := opts.Backends[backend]
	if !ok || build == nil {
		return nil, fmt.Errorf("provider %s: no backend registered for %q", res.Provider, backend)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if res.Proxy != "" && opts.HTTPClient == nil {
		// First, so the sign-in and rate-limit layers below wrap the
		// proxied client rather than replace it.
		c, err := ProxyClient(res.Proxy)
		if err != nil {
			return nil, fmt.Errorf("provider %s: proxy: %w", res.Provider, err)
		}
		opts.HTTPClient = c
	}
	if res.Spec.SignIn {
		if opts.SignIn == nil {
			return nil, fmt.Errorf("provider %s: sign-in providers are not available here", res.Provider)
		}
		hc, err := opts.SignIn(res, opts.HTTPClient)
		if err != nil {
			return nil, fmt.Errorf("provider %s: %w", res.Provider, err)
		}
		opts.HTTPClient = hc
	}
	var lim *RateLimiter
	if opts.RateLimits != nil {
		lim = opts.RateLimits.For(res.Provider)
		opts.HTTPClient = lim.client(opts.HTTPClient)
	}
	p, err := build(res, opts)
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", res.Provider, err)
	}
	if !res.NoTextToolCalls {
		p = &textCalls{next: p}
	}
	if lim != nil {
		p = lim.Wrap(p)
	}
	if !opts.NoRetry {
		policy := RetryPolicy{}
		if opts.Retry != nil {
			policy = *opts.Retry
		}
		if policy.Logger == nil {
			policy.Logger = opts.Logger.With("provider", res.Provider)
		}
		p = NewRetry(p, policy)
	}
	return &modelNamer{next: p, requested: res.RequestedModel, send: res.Model}, nil
}

// Backend is the backend to build: the spec's, or the Responses API when
// the provider is configured with api: "responses" (OpenAI-compatible
// providers only).
func (res Resolution) Backend() (string, error) {
	switch res.API {
	case "", APIChat:
		return res.Spec.Backend, nil
	case APIResponses:
		if res.Spec.Backend != BackendOpenAICompat {
			return "", fmt.Errorf("provider %s: api %q needs an OpenAI-compatible provider (this one speaks %s)", res.Provider, res.API, res.Spec.Backend)
		}
		return BackendOpenAIResponses, nil
	default:
		return "", fmt.Errorf("provider %s: unknown api %q (want %q or %q)", res.Provider, res.API, APIChat, APIResponses)
	}
}

// NewChain resolves the primary model and each fallback model and returns
// one Provider trying them in order (see Fallback), plus the resolutions
// for nanobot status. forced pins the primary only; fallbacks route by
// their own names. With no fallbacks it is New.
func NewChain(model string, fallbacks []string, forced string, configured map[string]Settings, opts Options) (Provider, []Resolution, error) {
	models := []ChainModel{{Model: model, Provider: forced}}
	for _, f := range fallbacks {
		models = append(models, ChainModel{Model: f})
	}
	return NewChainOf(models, configured, opts)
}

// ChainModel is one model of a chain and the provider it is pinned to (""
// or "auto": matched from the model name).
type ChainModel struct {
	Model, Provider string
}

// NewChainOf is NewChain with a provider per model (fallback entries that
// name their provider).
func NewChainOf(models []ChainModel, configured map[string]Settings, opts Options) (Provider, []Resolution, error) {
	var (
		cands []Candidate
		ress  []Resolution
	)
	for _, m := range models {
		res, err := Resolve(m.Model, m.Provider, configured)
		if err != nil {
			return nil, nil, err
		}
		p, err := New(res, opts)
		if err != nil {
			return nil, nil, err
		}
		cands = append(cands, Candidate{Model: res.Model, Provider: p, Name: res.Provider})
		ress = append(ress, res)
	}
	if len(cands) == 1 {
		return cands[0].Provider, ress, nil
	}
	return NewFallback(opts.Logger, cands...), ress, nil
}

// modelNamer sends the resolved model name when the caller passes the
// configured one (or none), so "openrouter/x/y" is never sent verbatim.
type modelNamer struct {
	next            Provider
	requested, send string
}

func (m *modelNamer) fix(req ChatRequest) ChatRequest {
	if req.Model == "" || req.Model == m.requested {
		req.Model = m.send
	}
	return req
}

func (m *modelNamer) Chat(ctx context.Context, req ChatRequest) (*LLMResponse, error) {
	return m.next.Chat(ctx, m.fix(req))
}

func (m *modelNamer) Stream(ctx context.Context, req ChatRequest, onDelta func(Delta)) (*LLMResponse, error) {
	return m.next.Stream(ctx, m.fix(req), onDelta)
}
