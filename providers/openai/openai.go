// Package openai is the OpenAI-compatible chat-completions backend, a lean
// client of the wire format (wire.go, client.go) on net/http and
// encoding/json. It serves OpenAI itself and every server speaking the
// same format: DeepSeek, OpenRouter,
// Gemini's OpenAI endpoint, Groq, Moonshot, Zhipu, DashScope, SiliconFlow,
// VolcEngine, vLLM, Ollama, LM Studio, and Azure OpenAI (AzureAPIVersion).
//
// It converts providers.ChatRequest to the request body and the response
// or server-sent event stream back to providers.LLMResponse. DeepSeek-style reasoning_content
// is read from responses and stream deltas and sent back on replayed
// assistant messages. Broken tool-argument JSON is repaired or reported on
// the tool call, never a crash. Errors are *providers.Error, classified for
// the retry policy in package providers; it never retries itself.
// Authentication beyond an API key (a sign-in provider's token) plugs in
// as Options.HTTPClient's transport.
//
// Responses (responses.go) is the Responses API backend beside it, sharing
// Options and error handling; a provider configured with api: "responses"
// gets it.
//
// A Provider is safe for concurrent use.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/internal/calltimer"
	"github.com/nanobot-go/nanobot/providers/internal/wire"
)

// DefaultAPIBase is OpenAI's endpoint.
const DefaultAPIBase = "https://api.openai.com/v1"

// Options configures a Provider.
type Options struct {
	// Endpoint: Name defaults to "openai"; the APIKey is sent as a bearer
	// token (as api-key for Azure) and may be empty for local servers;
	// APIBase is the endpoint up to and including /v1, DefaultAPIBase by
	// default, and for Azure the resource endpoint
	// (https://NAME.openai.azure.com); ExtraHeaders suit OpenRouter's
	// HTTP-Referer or a gateway's tenant header; a nil HTTPClient means a
	// client with sane transport defaults, and a sign-in provider wraps
	// its transport to add its credential (providers/auth).
	providers.Endpoint
	// SchemaDialect is the tool-schema flavour; "" means providers.DialectOpenAI.
	SchemaDialect providers.SchemaDialect
	// NoReasoningReplay stops sending reasoning_content back on assistant
	// messages (OpenAI and Azure reject unknown message fields).
	NoReasoningReplay bool
	// MaxCompletionTokens sends ChatRequest.MaxTokens as
	// max_completion_tokens (OpenAI's current name) instead of max_tokens.
	MaxCompletionTokens bool
	// AzureAPIVersion switches to Azure OpenAI: requests go to
	// /openai/deployments/{model}/chat/completions?api-version=..., the model
	// name being the deployment, and the key is sent as the api-key header.
	AzureAPIVersion string
	// AlwaysStream serves Chat through a stream too, for endpoints that
	// accept only streaming requests (ChatGPT's Codex endpoint). Responses
	// backend only.
	AlwaysStream bool
	// Prepare, when set, sees each Responses request before it is sent:
	// the body's top-level fields (ExtraBody merged), which it may change,
	// and the request's headers, to which it may add. An endpoint with
	// conventions of its own (xAI's subscription proxy) plugs in here. It
	// runs on the caller's goroutine with the call's ctx and may do IO; an
	// error ends the call. Responses backend only.
	Prepare func(ctx context.Context, model string, fields map[string]json.RawMessage, header http.Header) error
	// Logger receives debug lines; nil discards.
	Logger *slog.Logger
}

// Provider talks to one OpenAI-compatible endpoint.
type Provider struct {
	opts    Options
	name    string
	dialect providers.SchemaDialect
	log     *slog.Logger
}

var _ providers.Provider = (*Provider)(nil)

// New builds a Provider. It does no IO.
func New(opts Options) (*Provider, error) {
	if opts.Name == "" {
		opts.Name = "openai"
	}
	if opts.APIBase == "" {
		if opts.AzureAPIVersion != "" {
			return nil, fmt.Errorf("openai: %s: azure needs apiBase (https://NAME.openai.azure.com)", opts.Name)
		}
		opts.APIBase = DefaultAPIBase
	}
	base, err := url.Parse(opts.APIBase)
	if err != nil || base.Scheme == "" || base.Host == "" {
		return nil, fmt.Errorf("openai: %s: invalid apiBase %q", opts.Name, opts.APIBase)
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = defaultHTTPClient()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.AzureAPIVersion != "" && base.Scheme != "https" && !isLoopback(base.Hostname()) {
		// Azure keys go over TLS only, except to loopback (local
		// emulators, tests).
		return nil, fmt.Errorf("openai: %s: azure apiBase %q must be https", opts.Name, opts.APIBase)
	}
	dialect := opts.SchemaDialect
	if dialect == "" {
		dialect = providers.DialectOpenAI
	}
	return &Provider{
		opts:    opts,
		name:    opts.Name,
		dialect: dialect,
		log:     opts.Logger.With("provider", opts.Name),
	}, nil
}

// Chat sends one non-streaming request.
func (p *Provider) Chat(ctx context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	body, err := p.encode(params, false)
	if err != nil {
		return nil, p.requestError(err)
	}
	t := calltimer.Start(ctx, p.opts.RequestTimeout, 0)
	defer t.Stop()
	var cc chatCompletion
	if err := p.call(t.Context(), "chat/completions", req.Model, body, &cc); err != nil {
		return nil, p.classify(t, err)
	}
	return p.parseCompletion(&cc, req.Model, len(req.Tools) > 0)
}

// Stream sends a streaming request, calling onDelta (on this goroutine) for
// each piece of text or reasoning as it arrives.
func (p *Provider) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	params.Stream = true
	params.StreamOptions = &streamOptions{IncludeUsage: true}
	body, err := p.encode(params, true)
	if err != nil {
		return nil, p.requestError(err)
	}

	t := calltimer.Start(ctx, p.opts.RequestTimeout, p.opts.StreamIdleTimeout)
	defer t.Stop()
	acc := newAccumulator(req.Model, len(req.Tools) > 0)
	if err := p.readStream(t, req.Model, body, acc, onDelta); err != nil {
		if acc.finished && ctx.Err() == nil {
			// The answer was complete; only the trailing usage chunk or
			// [DONE] was lost. Keep the answer.
			p.log.DebugContext(ctx, "stream broke after finish_reason", "error", err.Error())
			return acc.response(), nil
		}
		return nil, p.classify(t, err)
	}
	if !acc.finished {
		return nil, &providers.Error{
			Provider: p.name, Transient: true, Err: providers.ErrStreamTruncated,
			Message: "stream ended before a finish_reason",
		}
	}
	return acc.response(), nil
}

// readStream posts a streaming request and folds its chunks into acc until
// [DONE] or the end of the body.
func (p *Provider) readStream(t *calltimer.Timer, model string, body []byte, acc *accumulator, onDelta func(providers.Delta)) error {
	res, err := p.post(t.Context(), "chat/completions", model, body, true)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	events := wire.NewSSEReader(res.Body)
	for {
		data, err := events.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		t.Kick()
		if isDone(data) {
			return nil
		}
		var chunk chatCompletion
		if err := wire.DecodeLenient(data, &chunk); err != nil {
			return fmt.Errorf("decode stream chunk: %w", err)
		}
		if present(chunk.Error) {
			return &wire.EventError{Data: bytes.Clone(data)}
		}
		if d := acc.add(&chunk); onDelta != nil && (d.Content != "" || d.Reasoning != "") {
			onDelta(d)
		}
	}
}

func defaultHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// A server that accepts the connection but never answers is caught by
	// the request/idle timeouts; this bounds the TLS and header phase too.
	tr.ResponseHeaderTimeout = 5 * time.Minute
	return &http.Client{Transport: tr}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// requestError reports a request the backend could not even encode.
func (p *Provider) requestError(err error) error {
	return &providers.Error{Provider: p.name, Message: err.Error(), Err: err}
}

var errNoMessages = errors.New("no messages")
