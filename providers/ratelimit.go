package providers

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RateLimit is a proactive limit; a zero field is no limit.
type RateLimit struct {
	// RPM is requests per minute, spread evenly (one every 60/RPM
	// seconds; no burst).
	RPM int
	// TPM is tokens per minute: a request takes its prompt estimate plus
	// its reply cap, settled with the usage the provider reports. Up to a
	// minute's worth may go at once.
	TPM int
}

// RateLimitConfig is the limit of one provider: RateLimit shared by all
// its models, and Models (by the model name sent) with limits of their
// own. A request takes from both.
type RateLimitConfig struct {
	RateLimit
	Models map[string]RateLimit
}

// RateLimiters hands out one RateLimiter per provider config name, so
// every Provider built for a provider (primary, fallbacks, presets,
// agents) shares its buckets. Safe for concurrent use.
type RateLimiters struct {
	cfg map[string]RateLimitConfig
	mu  sync.Mutex
	by  map[string]*RateLimiter
}

// NewRateLimiters configures the limiters; providers without an entry get
// a limiter that only learns from the vendor's headers.
func NewRateLimiters(cfg map[string]RateLimitConfig) *RateLimiters {
	return &RateLimiters{cfg: cfg, by: map[string]*RateLimiter{}}
}

// For returns the limiter of provider, creating it on first use.
func (r *RateLimiters) For(provider string) *RateLimiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.by[provider]
	if l == nil {
		l = newRateLimiter(provider, r.cfg[provider])
		r.by[provider] = l
	}
	return l
}

// Configured reports whether provider has a configured limit (rather
// than only what the vendor's headers teach).
func (r *RateLimiters) Configured(provider string) bool {
	c, ok := r.cfg[provider]
	return ok && (c.RPM > 0 || c.TPM > 0 || len(c.Models) > 0)
}

// maxPause caps how long a vendor's hint (Retry-After, a reset time) may
// hold calls back.
const maxPause = 5 * time.Minute

// noticeEvery is how often a waiting call repeats its wait notice (chat
// typing indicators fade after about five seconds).
const noticeEvery = 4 * time.Second

// RateLimiter holds calls to one provider back so that they stay within
// the configured RPM and TPM, and within what the vendor's rate-limit
// headers say is left. Calls wait in the order they asked (token buckets
// that may go into debt: each call is given the moment its share is
// free); the wait is reported to ChatRequest.OnWait, never as an error.
// A cancelled wait returns the caller's context error.
//
// Concurrency: safe for concurrent use; one mutex guards the buckets and
// the learned state, and no IO or sleep happens under it.
type RateLimiter struct {
	provider string

	mu     sync.Mutex
	shared limitBuckets
	models map[string]*limitBuckets // configured per-model limits
	vendor map[string]*vendorState  // learned from responses, by model
}

// limitBuckets are the request and token buckets of one limit (nil: none).
type limitBuckets struct {
	req, tok *bucket
}

func newLimitBuckets(l RateLimit) limitBuckets {
	var b limitBuckets
	if l.RPM > 0 {
		b.req = &bucket{perSec: float64(l.RPM) / 60, capacity: 1}
	}
	if l.TPM > 0 {
		b.tok = &bucket{perSec: float64(l.TPM) / 60, capacity: float64(l.TPM)}
	}
	return b
}

func newRateLimiter(provider string, cfg RateLimitConfig) *RateLimiter {
	l := &RateLimiter{provider: provider, shared: newLimitBuckets(cfg.RateLimit),
		models: map[string]*limitBuckets{}, vendor: map[string]*vendorState{}}
	for m, ml := range cfg.Models {
		b := newLimitBuckets(ml)
		l.models[m] = &b
	}
	return l
}

// bucket is a token bucket whose level may go below zero: a call that
// finds too little takes its share anyway and waits until the refill
// has paid the debt, which queues calls in order without a queue.
type bucket struct {
	perSec, capacity float64
	level            float64
	at               time.Time // when level was last brought up to date
}

func (b *bucket) refill(now time.Time) {
	if b.at.IsZero() {
		b.level, b.at = b.capacity, now
		return
	}
	if now.After(b.at) {
		b.level = min(b.capacity, b.level+now.Sub(b.at).Seconds()*b.perSec)
		b.at = now
	}
}

// take takes n and returns when the caller may go.
func (b *bucket) take(now time.Time, n float64) time.Time {
	b.refill(now)
	b.level -= min(n, b.capacity) // a call bigger than the bucket waits for a full one
	if b.level >= 0 {
		return now
	}
	return now.Add(time.Duration(-b.level / b.perSec * float64(time.Second)))
}

// give returns n (a cancelled wait, a call that used less than it took).
func (b *bucket) give(now time.Time, n float64) {
	b.refill(now)
	b.level = min(b.capacity, b.level+n)
}

// vendorState is what a model's last responses said about its limits.
type vendorState struct {
	pausedUntil time.Time // Retry-After
	// remainingReq and remainingTok are what the vendor said is left (-1:
	// unknown), minus what was sent since; the counts are back to unknown
	// once their reset time has passed.
	remainingReq, remainingTok int64
	resetReq, resetTok         time.Time
}

// until is when a call of tokens may go by what the vendor said; the
// zero time when it may go now.
func (v *vendorState) until(now time.Time, tokens int64) time.Time {
	var u time.Time
	if v.pausedUntil.After(now) {
		u = v.pausedUntil
	}
	if !v.resetReq.After(now) {
		v.remainingReq = -1
	} else if v.remainingReq == 0 && v.resetReq.After(u) {
		u = v.resetReq
	}
	if !v.resetTok.After(now) {
		v.remainingTok = -1
	} else if v.remainingTok >= 0 && v.remainingTok < tokens && v.resetTok.After(u) {
		u = v.resetTok
	}
	return u
}

func (v *vendorState) sent(tokens int64) {
	if v.remainingReq > 0 {
		v.remainingReq--
	}
	if v.remainingTok > 0 {
		v.remainingTok = max(0, v.remainingTok-tokens)
	}
}

// ticket is one admitted call.
type ticket struct {
	model  string
	tokens int64
}

// bucketsOf lists the buckets a call to model takes from: request
// buckets at even indexes, token buckets at odd ones; nil where no limit
// is set.
func (l *RateLimiter) bucketsOf(model string) []*bucket {
	out := []*bucket{l.shared.req, l.shared.tok}
	if m := l.models[model]; m != nil {
		out = append(out, m.req, m.tok)
	}
	return out
}

// wait blocks until a call to model estimated at tokens may be sent, and
// returns the ticket to settle after it. It returns ctx's error if ctx
// ends first (the call is then not made).
func (l *RateLimiter) wait(ctx context.Context, model string, tokens int64, notice func(time.Duration)) (ticket, error) {
	t := ticket{model: model, tokens: tokens}
	l.mu.Lock()
	now := time.Now()
	ready := now
	for i, b := range l.bucketsOf(model) {
		if b == nil {
			continue
		}
		n := float64(tokens)
		if i%2 == 0 {
			n = 1 // request buckets
		}
		if at := b.take(now, n); at.After(ready) {
			ready = at
		}
	}
	l.mu.Unlock()
	for {
		l.mu.Lock()
		now = time.Now()
		until := ready
		v := l.vendor[model]
		if v != nil {
			if u := v.until(now, tokens); u.After(until) {
				until = u
			}
		}
		if !until.After(now) {
			if v != nil {
				v.sent(tokens)
			}
			l.mu.Unlock()
			return t, nil
		}
		l.mu.Unlock()
		d := until.Sub(now)
		if notice != nil {
			notice(d)
		}
		if err := Sleep(ctx, min(d, noticeEvery)); err != nil {
			l.giveBack(t, float64(tokens), true)
			return t, err
		}
	}
}

// giveBack returns tokens (negative: takes more, a call that used more
// than its estimate) and, with request, the request itself (a call that
// was never sent).
func (l *RateLimiter) giveBack(t ticket, tokens float64, request bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	for i, b := range l.bucketsOf(t.model) {
		switch {
		case b == nil:
		case i%2 == 1:
			b.give(now, tokens)
		case request:
			b.give(now, 1)
		}
	}
}

// Observe learns from a response to a call to model: a Retry-After on an
// error response pauses the model's calls; the x-ratelimit-* (OpenAI and
// compatibles) and anthropic-ratelimit-* headers say how many requests
// and tokens are left until when.
func (l *RateLimiter) Observe(model string, status int, h http.Header) {
	now := time.Now()
	var pause time.Duration
	if status >= 400 {
		pause = ParseRetryAfter(h, now)
	}
	remReq, okReq := headerInt(h, "X-Ratelimit-Remaining-Requests", "Anthropic-Ratelimit-Requests-Remaining")
	remTok, okTok := headerInt(h, "X-Ratelimit-Remaining-Tokens", "Anthropic-Ratelimit-Tokens-Remaining")
	if pause <= 0 && !okReq && !okTok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	v := l.vendor[model]
	if v == nil {
		v = &vendorState{remainingReq: -1, remainingTok: -1}
		l.vendor[model] = v
	}
	if pause > 0 {
		if u := now.Add(min(pause, maxPause)); u.After(v.pausedUntil) {
			v.pausedUntil = u
		}
	}
	if okReq {
		if at, ok := resetTime(h, now, "X-Ratelimit-Reset-Requests", "Anthropic-Ratelimit-Requests-Reset"); ok {
			v.remainingReq, v.resetReq = remReq, at
		}
	}
	if okTok {
		if at, ok := resetTime(h, now, "X-Ratelimit-Reset-Tokens", "Anthropic-Ratelimit-Tokens-Reset"); ok {
			v.remainingTok, v.resetTok = remTok, at
		}
	}
}

func headerInt(h http.Header, names ...string) (int64, bool) {
	for _, n := range names {
		if s := strings.TrimSpace(h.Get(n)); s != "" {
			if v, err := strconv.ParseInt(s, 10, 64); err == nil && v >= 0 {
				return v, true
			}
		}
	}
	return 0, false
}

// resetTime reads a reset header: a duration ("1s", "6m0s", "20ms"; OpenAI),
// an RFC 3339 time (Anthropic) or seconds. It is capped at maxPause.
func resetTime(h http.Header, now time.Time, names ...string) (time.Time, bool) {
	for _, n := range names {
		s := strings.TrimSpace(h.Get(n))
		if s == "" {
			continue
		}
		var d time.Duration
		if v, err := time.ParseDuration(s); err == nil {
			d = v
		} else if t, err := time.Parse(time.RFC3339, s); err == nil {
			d = t.Sub(now)
		} else if secs, err := strconv.ParseFloat(s, 64); err == nil {
			d = time.Duration(secs * float64(time.Second))
		} else {
			continue
		}
		return now.Add(max(0, min(d, maxPause))), true
	}
	return time.Time{}, false
}

// Transport wraps base (nil: http.DefaultTransport) so that every response
// to a call made through Wrap is shown to Observe.
func (l *RateLimiter) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return observingTransport{next: base, l: l}
}

// client returns base (nil: a default client) with its transport wrapped
// by Transport.
func (l *RateLimiter) client(base *http.Client) *http.Client {
	if base == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = DefaultRequestTimeout // as the backends' own default
		return &http.Client{Transport: l.Transport(tr)}
	}
	c := *base
	c.Transport = l.Transport(base.Transport)
	return &c
}

type observingTransport struct {
	next http.RoundTripper
	l    *RateLimiter
}

func (t observingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if resp != nil {
		if model, ok := req.Context().Value(limitedModelKey{}).(string); ok {
			t.l.Observe(model, resp.StatusCode, resp.Header)
		}
	}
	return resp, err
}

// limitedModelKey carries the model of a limited call to the transport.
type limitedModelKey struct{}

// Wrap returns next with every call held back by the limiter first.
func (l *RateLimiter) Wrap(next Provider) Provider { return &limited{next: next, l: l} }

type limited struct {
	next Provider
	l    *RateLimiter
}

func (p *limited) Chat(ctx context.Context, req ChatRequest) (*LLMResponse, error) {
	return p.do(ctx, req, func(ctx context.Context) (*LLMResponse, error) { return p.next.Chat(ctx, req) })
}

func (p *limited) Stream(ctx context.Context, req ChatRequest, onDelta func(Delta)) (*LLMResponse, error) {
	return p.do(ctx, req, func(ctx context.Context) (*LLMResponse, error) { return p.next.Stream(ctx, req, onDelta) })
}

func (p *limited) do(ctx context.Context, req ChatRequest, call func(context.Context) (*LLMResponse, error)) (*LLMResponse, error) {
	t, err := p.l.wait(ctx, req.Model, EstimateRequestTokens(req), req.OnWait)
	if err != nil {
		return nil, Canceled(p.l.provider, err)
	}
	resp, err := call(context.WithValue(ctx, limitedModelKey{}, req.Model))
	var pe *Error
	switch {
	case err == nil && resp != nil && resp.Usage.Reported():
		p.l.giveBack(t, float64(t.tokens-int64(resp.Usage.PromptTokens+resp.Usage.CompletionTokens)), false)
	case errors.As(err, &pe) && pe.StatusCode >= 400:
		// Refused before any work: the request counts, its tokens do not.
		p.l.giveBack(t, float64(t.tokens), false)
	}
	return resp, err
}

// defaultReplyTokens is the reply size counted for a request without
// MaxTokens.
const defaultReplyTokens = 4096

// EstimateRequestTokens is a quick upper-end guess of what req costs
// against a tokens-per-minute limit, as vendors count it: about four
// characters a token for the prompt and tools, plus the reply cap.
func EstimateRequestTokens(req ChatRequest) int64 {
	chars := 0
	for _, m := range req.Messages {
		chars += len(m.Text()) + len(m.ReasoningContent) + 16
		for _, tc := range m.ToolCalls {
			chars += len(tc.Function.Name) + len(tc.Function.Arguments)
		}
		for _, p := range m.Parts {
			if p.Type == "image_url" {
				chars += 4 * 1000 // vendors count an image as roughly a thousand tokens
			}
		}
	}
	for _, t := range req.Tools {
		chars += len(t.Name) + len(t.Description) + 200 // the schema, roughly
	}
	reply := req.MaxTokens
	if reply <= 0 {
		reply = defaultReplyTokens
	}
	return int64(chars/4 + reply)
}
