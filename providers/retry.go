package providers

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"
)

// ImageOmittedNote replaces each image when a request is retried without
// images.
const ImageOmittedNote = "[image omitted: this model cannot read images]"

// RetryPolicy configures Retry. The zero value is the default policy.
type RetryPolicy struct {
	// Delays are the waits before the first, second, ... retry of a transient
	// error; their count is the retry budget. nil means 1s, 2s, 4s; an empty
	// non-nil slice disables retries.
	Delays []time.Duration
	// Jitter spreads each delay by up to ±Jitter of its length so clients
	// that failed together do not retry together. 0 means 0.1; negative
	// disables it.
	Jitter float64
	// MaxRetryAfter caps a vendor's Retry-After hint. 0 means 60s.
	MaxRetryAfter time.Duration
	// NoImageRetry disables the retry without images.
	NoImageRetry bool
	// Wait sleeps for d or until ctx ends. nil means a real timer. Tests
	// inject a recorder here to count waits without sleeping.
	Wait func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0, 1) for jitter. nil means math/rand/v2.
	Rand func() float64
	// Logger receives one line per retry. nil discards.
	Logger *slog.Logger
}

var defaultDelays = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}

// Retry wraps a Provider with the retry policy:
//
//   - a transient *Error (429 without exhausted quota, 408, 409, 5xx,
//     timeouts, stalled streams, connection resets) is retried after 1s, 2s,
//     4s with jitter, or after the vendor's Retry-After when it gave one
//     (capped by MaxRetryAfter);
//   - a non-transient failure of a request that carries images is retried
//     once with every image replaced by ImageOmittedNote, because many
//     models reject images with a plain 400; authentication, permission,
//     not-found and quota errors are excluded since images are not their cause;
//   - the caller's cancellation is never retried;
//   - a Stream that already delivered a delta to onDelta is never retried:
//     the caller has shown that text, and a second attempt would repeat it.
//     The error is returned as is and the caller decides.
//
// Everything else comes back as the backend's *Error.
type Retry struct {
	next   Provider
	policy RetryPolicy
}

var _ Provider = (*Retry)(nil)

// NewRetry wraps next with policy.
func NewRetry(next Provider, policy RetryPolicy) *Retry {
	if policy.Delays == nil {
		policy.Delays = defaultDelays
	}
	if policy.Jitter == 0 {
		policy.Jitter = 0.1
	}
	if policy.MaxRetryAfter == 0 {
		policy.MaxRetryAfter = 60 * time.Second
	}
	if policy.Wait == nil {
		policy.Wait = Sleep
	}
	if policy.Rand == nil {
		policy.Rand = rand.Float64
	}
	if policy.Logger == nil {
		policy.Logger = slog.New(slog.DiscardHandler)
	}
	return &Retry{next: next, policy: policy}
}

// Chat implements Provider.
func (r *Retry) Chat(ctx context.Context, req ChatRequest) (*LLMResponse, error) {
	return r.run(ctx, req, func(ctx context.Context, req ChatRequest) (*LLMResponse, bool, error) {
		resp, err := r.next.Chat(ctx, req)
		return resp, false, err
	})
}

// Stream implements Provider. See Retry for why a stream that delivered
// text is not retried.
func (r *Retry) Stream(ctx context.Context, req ChatRequest, onDelta func(Delta)) (*LLMResponse, error) {
	return r.run(ctx, req, func(ctx context.Context, req ChatRequest) (*LLMResponse, bool, error) {
		return streamDelivered(ctx, r.next, req, onDelta)
	})
}

type attemptFunc func(ctx context.Context, req ChatRequest) (resp *LLMResponse, delivered bool, err error)

func (r *Retry) run(ctx context.Context, req ChatRequest, attempt attemptFunc) (*LLMResponse, error) {
	resp, delivered, err := r.withTransientRetries(ctx, req, attempt)
	if err == nil || delivered || !r.imageRetryApplies(ctx, req, err) {
		return resp, err
	}
	r.policy.Logger.InfoContext(ctx, "retrying without images", "error", err.Error())
	resp, _, err = r.withTransientRetries(ctx, withoutImages(req), attempt)
	return resp, err
}

func (r *Retry) withTransientRetries(ctx context.Context, req ChatRequest, attempt attemptFunc) (*LLMResponse, bool, error) {
	for n := 0; ; n++ {
		resp, delivered, err := attempt(ctx, req)
		if err == nil {
			return resp, delivered, nil
		}
		if delivered || ctx.Err() != nil || !IsTransient(err) || n >= len(r.policy.Delays) {
			return nil, delivered, err
		}
		wait := r.delay(n, err)
		r.policy.Logger.InfoContext(ctx, "retrying llm call", "attempt", n+2, "wait", wait, "error", err.Error())
		if werr := r.policy.Wait(ctx, wait); werr != nil {
			return nil, false, err
		}
	}
}

// delay is the wait before retry number n (0-based).
func (r *Retry) delay(n int, err error) time.Duration {
	var pe *Error
	if errors.As(err, &pe) && pe.RetryAfter > 0 {
		return min(time.Duration(pe.RetryAfter)*time.Millisecond, r.policy.MaxRetryAfter)
	}
	d := r.policy.Delays[n]
	if r.policy.Jitter > 0 {
		spread := (r.policy.Rand()*2 - 1) * r.policy.Jitter
		d += time.Duration(float64(d) * spread)
	}
	return d
}

func (r *Retry) imageRetryApplies(ctx context.Context, req ChatRequest, err error) bool {
	if r.policy.NoImageRetry || ctx.Err() != nil || IsTransient(err) || !hasImages(req) {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pe *Error
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.StatusCode {
	case http.StatusUnauthorized, http.StatusPaymentRequired, http.StatusForbidden,
		http.StatusNotFound, http.StatusTooManyRequests:
		return false
	}
	return true
}

func hasImages(req ChatRequest) bool {
	for _, m := range req.Messages {
		if m.HasImages() {
			return true
		}
	}
	return false
}

// withoutImages returns a copy of req whose image parts are text notes; the
// caller's messages are untouched.
func withoutImages(req ChatRequest) ChatRequest {
	msgs := make([]Message, len(req.Messages))
	for i, m := range req.Messages {
		if m.HasImages() {
			parts := make([]ContentPart, len(m.Parts))
			for j, p := range m.Parts {
				if p.Type == "image_url" {
					p = TextPart(ImageOmittedNote)
				}
				parts[j] = p
			}
			m.Parts = parts
		}
		msgs[i] = m
	}
	req.Messages = msgs
	return req
}
