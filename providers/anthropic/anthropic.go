// Package anthropic is the Anthropic Messages API backend, built on the
// official SDK (github.com/anthropics/anthropic-sdk-go/v2).
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
// policy in package providers; the SDK's own retries are off.
//
// The Messages API version this SDK speaks has no temperature parameter,
// so ChatRequest.Temperature is not sent.
//
// A Provider is safe for concurrent use.
package anthropic

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	ant "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/internal/calltimer"
)

// DefaultAPIBase is Anthropic's endpoint.
const DefaultAPIBase = "https://api.anthropic.com"

// DefaultMaxTokens is sent when the request sets none; the API requires one.
const DefaultMaxTokens = 4096

// Options configures a Provider.
type Options struct {
	// Name names the provider in errors and logs. Default "anthropic".
	Name string
	// APIKey authenticates the requests.
	APIKey string
	// APIBase is the endpoint without /v1. Default DefaultAPIBase; a
	// trailing "/v1" is tolerated.
	APIBase string
	// ExtraHeaders are added to every request (anthropic-beta, a gateway's
	// header).
	ExtraHeaders map[string]string
	// ExtraBody is merged into every request body; its top-level keys
	// replace what the provider would send (config extraBody).
	ExtraBody map[string]any
	// HTTPClient overrides the HTTP client.
	HTTPClient *http.Client
	// RequestTimeout bounds a call, and a stream's wait for its first
	// event; 0 means none (the ctx decides).
	RequestTimeout time.Duration
	// StreamIdleTimeout fails a stream with no event for this long; 0 means none.
	StreamIdleTimeout time.Duration
	// DefaultMaxTokens replaces the package default when the request sets none.
	DefaultMaxTokens int
	// Logger receives debug lines; nil discards.
	Logger *slog.Logger
}

// Provider talks to the Messages API.
type Provider struct {
	opts    Options
	name    string
	svc     ant.MessageService
	timeout option.RequestOption
	log     *slog.Logger
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
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	reqOpts := []option.RequestOption{
		// Never read ANTHROPIC_* variables or profile files: the config is
		// the one source of credentials.
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base),
		// Package providers owns the retry policy.
		option.WithMaxRetries(0),
	}
	if opts.HTTPClient != nil {
		reqOpts = append(reqOpts, option.WithHTTPClient(opts.HTTPClient))
	}
	if opts.APIKey != "" {
		reqOpts = append(reqOpts, option.WithAPIKey(opts.APIKey))
	}
	for k, v := range opts.ExtraHeaders {
		reqOpts = append(reqOpts, option.WithHeader(k, v))
	}
	for _, k := range slices.Sorted(maps.Keys(opts.ExtraBody)) {
		reqOpts = append(reqOpts, option.WithJSONSet(providers.JSONPathKey(k), opts.ExtraBody[k]))
	}
	// The SDK refuses large non-streaming max_tokens unless a timeout is
	// given; ours (calltimer) fires first, this one only lifts the check.
	sdkTimeout := time.Hour
	if opts.RequestTimeout > 0 {
		sdkTimeout = opts.RequestTimeout + time.Minute
	}
	client := ant.NewClient(reqOpts...)
	return &Provider{
		opts:    opts,
		name:    opts.Name,
		svc:     client.Messages,
		timeout: option.WithRequestTimeout(sdkTimeout),
		log:     opts.Logger.With("provider", opts.Name),
	}, nil
}

// Chat sends one non-streaming request.
func (p *Provider) Chat(ctx context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	t := calltimer.Start(ctx, p.opts.RequestTimeout, 0)
	defer t.Stop()
	msg, err := p.svc.New(t.Context(), params, p.timeout)
	if err != nil {
		return nil, p.classify(t, err)
	}
	return parseMessage(msg, req.Model, nil), nil
}

// Stream sends a streaming request, calling onDelta (on this goroutine)
// with text as Delta.Content and thinking as Delta.Reasoning.
func (p *Provider) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	t := calltimer.Start(ctx, p.opts.RequestTimeout, p.opts.StreamIdleTimeout)
	defer t.Stop()
	stream := p.svc.NewStreaming(t.Context(), params)
	defer stream.Close()

	var msg ant.Message
	inputs := map[int]*strings.Builder{}
	stopped := false
	for stream.Next() {
		t.Kick()
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, &providers.Error{Provider: p.name, Message: "malformed stream: " + err.Error(), Err: err}
		}
		switch ev.Type {
		case "content_block_delta":
			if ev.Delta.Type == "input_json_delta" {
				b := inputs[int(ev.Index)]
				if b == nil {
					b = &strings.Builder{}
					inputs[int(ev.Index)] = b
				}
				b.WriteString(ev.Delta.PartialJSON)
			}
			if onDelta == nil {
				continue
			}
			switch ev.Delta.Type {
			case "text_delta":
				if ev.Delta.Text != "" {
					onDelta(providers.Delta{Content: ev.Delta.Text})
				}
			case "thinking_delta":
				if ev.Delta.Thinking != "" {
					onDelta(providers.Delta{Reasoning: ev.Delta.Thinking})
				}
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		return nil, p.classify(t, err)
	}
	if !stopped {
		if pe := t.Classify(p.name); pe != nil {
			return nil, pe
		}
		return nil, &providers.Error{
			Provider: p.name, Transient: true, Err: providers.ErrStreamTruncated,
			Message: "stream ended before message_stop",
		}
	}
	return parseMessage(&msg, req.Model, inputs), nil
}
