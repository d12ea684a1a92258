// Package anthropic is the Anthropic Messages API backend: a small client
// of the wire (POST /v1/messages, JSON or server-sent events) on net/http
// and encoding/json. The official SDK is used only by the tests, to check
// that what we send and read fits its types.
//
// It converts the OpenAI-shaped providers.Message history into Messages API
// turns: system messages become system text blocks; consecutive tool
// results merge into one user message of tool_result blocks; assistant tool
// calls become tool_use blocks with decoded input; data: URL images become
// base64 image sources; thinking and redacted_thinking blocks are replayed
// with their signatures. Two cache_control breakpoints (the last system
// block and the last message before the newest user message) keep the
// stable prefix in the prompt cache. ReasoningEffort maps to a thinking
// budget.
//
// Streams report text deltas as Delta.Content and thinking deltas as
// Delta.Reasoning. Errors are *providers.Error, classified for the retry
// policy in package providers, which also owns the retries.
//
// The Messages API version spoken here (anthropic-version 2026-10-21) has
// no temperature parameter, so ChatRequest.Temperature is not sent.
//
// A Provider is safe for concurrent use.
package anthropic

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/internal/calltimer"
	"github.com/nanobot-go/nanobot/providers/internal/wire"
)

// DefaultAPIBase is Anthropic's endpoint.
const DefaultAPIBase = "https://api.anthropic.com"

// DefaultMaxTokens is sent when the request sets none; the API requires one.
const DefaultMaxTokens = 4096

// Options configures a Provider.
type Options struct {
	// Endpoint: Name defaults to "anthropic"; APIBase is the endpoint
	// without /v1 (a trailing "/v1" is tolerated), DefaultAPIBase by
	// default; the APIKey is sent as a bearer token; ExtraHeaders suit
	// anthropic-beta or a gateway's header; HTTPClient defaults to
	// http.DefaultClient.
	providers.Endpoint
	// DefaultMaxTokens replaces the package default when the request sets none.
	DefaultMaxTokens int
	// Logger receives debug lines; nil discards.
	Logger *slog.Logger
}

// Provider talks to the Messages API.
type Provider struct {
	opts Options
	name string
	base string // APIBase without a trailing /v1
	log  *slog.Logger
}

var _ providers.Provider = (*Provider)(nil)

// New builds a Provider. It does no IO.
func New(opts Options) (*Provider, error) {
	if opts.Name == "" {
		opts.Name = "anthropic"
	}
	if opts.APIBase == "" {
		opts.APIBase = DefaultAPIBase
	}
	base := strings.TrimSuffix(strings.TrimRight(opts.APIBase, "/"), "/v1")
	if u, err := url.Parse(base); err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("anthropic: %s: invalid apiBase %q", opts.Name, opts.APIBase)
	}
	if opts.DefaultMaxTokens <= 0 {
		opts.DefaultMaxTokens = DefaultMaxTokens
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Provider{
		opts: opts,
		name: opts.Name,
		base: base,
		log:  opts.Logger.With("provider", opts.Name),
	}, nil
}

// Chat sends one non-streaming request.
func (p *Provider) Chat(ctx context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	body, err := p.body(req, false)
	if err != nil {
		return nil, err
	}
	t := calltimer.Start(ctx, p.opts.RequestTimeout, 0)
	defer t.Stop()
	msg, err := p.call(t.Context(), body)
	if err != nil {
		return nil, p.classify(t, err)
	}
	return parseMessage(msg, req.Model), nil
}

// Stream sends a streaming request, calling onDelta (on this goroutine)
// with text as Delta.Content and thinking as Delta.Reasoning.
func (p *Provider) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	body, err := p.body(req, true)
	if err != nil {
		return nil, err
	}
	t := calltimer.Start(ctx, p.opts.RequestTimeout, p.opts.StreamIdleTimeout)
	defer t.Stop()
	var acc accumulator
	if err := p.readStream(t, body, &acc, onDelta); err != nil {
		if !acc.stopped || ctx.Err() != nil {
			return nil, p.classify(t, err)
		}
		// The message was complete; only the end of the body was lost.
		p.log.DebugContext(ctx, "stream broke after message_stop", "error", err.Error())
	}
	if !acc.stopped {
		if pe := t.Classify(p.name); pe != nil {
			return nil, pe
		}
		return nil, &providers.Error{
			Provider: p.name, Transient: true, Err: providers.ErrStreamTruncated,
			Message: "stream ended before message_stop",
		}
	}
	return parseMessage(&acc.msg, req.Model), nil
}

// body builds and encodes the request.
func (p *Provider) body(req providers.ChatRequest, stream bool) ([]byte, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	params.Stream = stream
	body, err := wire.Encode(params, p.opts.ExtraBody, stream)
	if err != nil {
		return nil, p.requestError(err)
	}
	return body, nil
}

// call sends a non-streaming request and decodes the message.
func (p *Provider) call(ctx context.Context, body []byte) (*messageResponse, error) {
	var msg messageResponse
	if err := wire.Call(ctx, p.opts.HTTPClient, p.endpoint(), p.header(), body, &msg); err != nil {
		return nil, err
	}
	return &msg, nil
}
