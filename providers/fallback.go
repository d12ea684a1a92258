package providers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Candidate is one model of a fallback chain and the provider serving it.
type Candidate struct {
	// Model is sent as ChatRequest.Model; empty keeps the request's model.
	Model    string
	Provider Provider
	// Name is the provider's name (LLMResponse.Provider when it answers).
	Name string
}

// Attempt is a call a chain made and gave up on for the next candidate.
type Attempt struct {
	Provider, Model string
	Duration        time.Duration
	Err             error
}

type attemptsKey struct{}

// WithAttempts has chains on ctx report each call they give up on to fn
// (the usage ledger records it: a failed call is a call).
func WithAttempts(ctx context.Context, fn func(Attempt)) context.Context {
	return context.WithValue(ctx, attemptsKey{}, fn)
}

func reportAttempt(ctx context.Context, a Attempt) {
	if fn, ok := ctx.Value(attemptsKey{}).(func(Attempt)); ok {
		fn(a)
	}
}

// Fallback tries its candidates in order until one answers. A candidate is
// abandoned for the next on any error (after that candidate's own retries,
// so wrap each in Retry), authentication errors included, because a broken
// key on the primary should not silence the bot. It stops early when the
// caller's context ends, and a Stream stops at the first failure after
// text was delivered, since the next model would start the answer over.
//
// LLMResponse.Model and .Provider name the candidate that answered; the
// calls given up on are reported to WithAttempts' function.
type Fallback struct {
	candidates []Candidate
	logger     *slog.Logger
}

var _ Provider = (*Fallback)(nil)

// NewFallback builds a chain; logger may be nil.
func NewFallback(logger *slog.Logger, candidates ...Candidate) *Fallback {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Fallback{candidates: candidates, logger: logger}
}

// Chat implements Provider.
func (f *Fallback) Chat(ctx context.Context, req ChatRequest) (*LLMResponse, error) {
	return f.run(ctx, req, func(c Candidate, req ChatRequest) (*LLMResponse, bool, error) {
		resp, err := c.Provider.Chat(ctx, req)
		return resp, false, err
	})
}

// Stream implements Provider.
func (f *Fallback) Stream(ctx context.Context, req ChatRequest, onDelta func(Delta)) (*LLMResponse, error) {
	return f.run(ctx, req, func(c Candidate, req ChatRequest) (*LLMResponse, bool, error) {
		return streamDelivered(ctx, c.Provider, req, onDelta)
	})
}

func (f *Fallback) run(ctx context.Context, req ChatRequest, call func(Candidate, ChatRequest) (*LLMResponse, bool, error)) (*LLMResponse, error) {
	if len(f.candidates) == 0 {
		return nil, errors.New("fallback: no models configured")
	}
	var errs []error
	for i, c := range f.candidates {
		r := req
		if c.Model != "" {
			r.Model = c.Model
		}
		start := time.Now()
		resp, delivered, err := call(c, r)
		if err == nil {
			if c.Model != "" || resp.Model == "" {
				resp.Model = r.Model
			}
			if c.Name != "" {
				resp.Provider = c.Name
			}
			return resp, nil
		}
		errs = append(errs, fmt.Errorf("model %s: %w", r.Model, err))
		if ctx.Err() != nil || errors.Is(err, context.Canceled) || delivered {
			break
		}
		if i+1 < len(f.candidates) {
			f.logger.WarnContext(ctx, "model failed, falling back", "model", r.Model,
				"next", f.candidates[i+1].Model, "error", err.Error())
			reportAttempt(ctx, Attempt{Provider: c.Name, Model: r.Model, Duration: time.Since(start), Err: err})
		}
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	return nil, fmt.Errorf("all %d models failed: %w", len(errs), errors.Join(errs...))
}
