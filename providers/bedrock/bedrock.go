// Package bedrock is the AWS Bedrock backend, speaking the Bedrock Runtime
// Converse API (POST /model/{modelId}/converse) and ConverseStream
// (/converse-stream, answered in the AWS event-stream binary framing).
//
// The wire JSON is built here and requests are signed with the AWS SDK's
// SigV4 signer; the SDK's generated bedrockruntime client and its full
// credential chain are not used because together they add about 3.4 MiB to
// the static binary (docs/providers.md has the figures). Credentials come,
// in order, from: providers.bedrock.apiKey (a Bedrock API key, sent as a
// bearer token, as is AWS_BEARER_TOKEN_BEDROCK); a profile named in the
// config (the shared credentials and config files); the environment's
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN; the shared
// files for AWS_PROFILE or "default". They are read on each call, so a
// refreshed credentials file is picked up without a restart. SSO, web
// identity and instance-metadata roles are not resolved.
//
// History conversion follows the Converse rules: system text apart, tool
// results as user toolResult blocks, roles merged so they alternate, a
// placeholder tool declared when the history has tool blocks but the
// request offers none. ReasoningEffort turns on Claude thinking through
// additionalModelRequestFields; the config's extraBody is deep-merged there
// too. Usage (inputTokens plus the cache counts) is reported in
// providers.Usage, so it reaches the usage ledger like any provider's.
//
// Errors are *providers.Error, classified for the retry policy in package
// providers. A Provider is safe for concurrent use.
package bedrock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/internal/calltimer"
)

// DefaultMaxTokens is sent when the request sets none.
const DefaultMaxTokens = 4096

// signingName is Bedrock Runtime's SigV4 service name.
const signingName = "bedrock"

// maxErrorBody bounds how much of an error body is read.
const maxErrorBody = 64 << 10

// Options configures a Provider.
type Options struct {
	// Endpoint: Name defaults to "bedrock"; APIKey is a Bedrock API key,
	// sent as a bearer token instead of SigV4; APIBase overrides the
	// endpoint (https://bedrock-runtime.REGION.amazonaws.com) for a VPC
	// endpoint, a proxy or a test fake; ExtraBody is deep-merged into
	// additionalModelRequestFields rather than the body's top level.
	providers.Endpoint
	// Region is the AWS region (us-east-1, ...); "" falls back to
	// AWS_REGION, AWS_DEFAULT_REGION, then the profile's region.
	Region string
	// Profile is the shared config/credentials profile; "" means
	// AWS_PROFILE or "default" (and lets environment keys win).
	Profile string
	// DefaultMaxTokens replaces the package default when the request sets none.
	DefaultMaxTokens int
	// Getenv reads the environment (AWS_* variables, HOME); nil means os.Getenv.
	Getenv func(string) string
	// Logger receives debug lines; nil discards.
	Logger *slog.Logger
}

// Provider talks to Bedrock Runtime.
type Provider struct {
	opts   Options
	name   string
	client *http.Client
	chain  chain
	signer *v4.Signer
	log    *slog.Logger
}

var _ providers.Provider = (*Provider)(nil)

// New builds a Provider. It does no IO: credentials and the region are
// resolved on each call.
func New(opts Options) (*Provider, error) {
	if opts.Name == "" {
		opts.Name = "bedrock"
	}
	if opts.APIBase != "" {
		if u, err := url.Parse(opts.APIBase); err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("bedrock: %s: invalid apiBase %q", opts.Name, opts.APIBase)
		}
	}
	if opts.DefaultMaxTokens <= 0 {
		opts.DefaultMaxTokens = DefaultMaxTokens
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	return &Provider{
		opts: opts, name: opts.Name, client: client,
		chain:  chain{profile: opts.Profile, getenv: opts.Getenv},
		signer: v4.NewSigner(),
		log:    opts.Logger.With("provider", opts.Name),
	}, nil
}

// Chat sends one Converse request.
func (p *Provider) Chat(ctx context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	t := calltimer.Start(ctx, p.opts.RequestTimeout, 0)
	defer t.Stop()
	res, err := p.do(t, req, "converse", "application/json")
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var out converseResponse
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		if pe := t.Classify(p.name); pe != nil {
			return nil, pe
		}
		return nil, &providers.Error{Provider: p.name, Message: "malformed response: " + err.Error(), Transient: true, Err: err}
	}
	return out.response(req.Model), nil
}

// Stream sends a ConverseStream request, calling onDelta (on this
// goroutine) with text as Delta.Content and reasoning as Delta.Reasoning.
func (p *Provider) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	t := calltimer.Start(ctx, p.opts.RequestTimeout, p.opts.StreamIdleTimeout)
	defer t.Stop()
	res, err := p.do(t, req, "converse-stream", "application/vnd.amazon.eventstream")
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()

	dec := eventstream.NewDecoder()
	var (
		acc accumulator
		buf []byte
	)
	for {
		msg, err := dec.Decode(res.Body, buf)
		if err != nil {
			if pe := t.Classify(p.name); pe != nil {
				return nil, pe
			}
			if errors.Is(err, io.EOF) && acc.stopped {
				break
			}
			if errors.Is(err, io.EOF) {
				return nil, &providers.Error{Provider: p.name, Transient: true, Err: providers.ErrStreamTruncated,
					Message: "stream ended before messageStop"}
			}
			return nil, providers.NetworkError(p.name, fmt.Errorf("read event stream: %w", err), p.opts.APIKey)
		}
		buf = msg.Payload[:0]
		t.Kick()
		if err := p.event(&acc, msg, onDelta); err != nil {
			return nil, err
		}
	}
	return acc.response(req.Model), nil
}

// event applies one event-stream message.
func (p *Provider) event(a *accumulator, msg eventstream.Message, onDelta func(providers.Delta)) error {
	header := func(name string) string {
		if v := msg.Headers.Get(name); v != nil {
			return v.String()
		}
		return ""
	}
	switch header(":message-type") {
	case "event":
	case "exception":
		return p.streamException(header(":exception-type"), msg.Payload)
	case "error":
		return &providers.Error{Provider: p.name, Transient: true,
			Message: providers.Redact(header(":error-code")+": "+header(":error-message"), p.opts.APIKey)}
	default:
		return nil
	}
	bad := func(err error) error {
		return &providers.Error{Provider: p.name, Message: "malformed stream event " + header(":event-type") + ": " + err.Error(), Err: err}
	}
	switch header(":event-type") {
	case "contentBlockStart":
		var ev blockStartEvent
		if err := json.Unmarshal(msg.Payload, &ev); err != nil {
			return bad(err)
		}
		if tu := ev.Start.ToolUse; tu != nil {
			b := a.block(ev.ContentBlockIndex)
			b.isTool, b.toolID, b.toolName = true, tu.ToolUseID, tu.Name
		}
	case "contentBlockDelta":
		var ev blockDeltaEvent
		if err := json.Unmarshal(msg.Payload, &ev); err != nil {
			return bad(err)
		}
		b := a.block(ev.ContentBlockIndex)
		switch d := ev.Delta; {
		case d.Text != nil:
			b.text.WriteString(*d.Text)
			if onDelta != nil && *d.Text != "" {
				onDelta(providers.Delta{Content: *d.Text})
			}
		case d.ToolUse != nil:
			b.isTool = true
			b.toolInput.WriteString(d.ToolUse.Input)
		case d.ReasoningContent != nil:
			rc := d.ReasoningContent
			b.reasoning.WriteString(rc.Text)
			if rc.Signature != "" {
				b.signature = rc.Signature
			}
			b.redacted = append(b.redacted, rc.RedactedContent...)
			if onDelta != nil && rc.Text != "" {
				onDelta(providers.Delta{Reasoning: rc.Text})
			}
		}
	case "messageStop":
		var ev messageStopEvent
		if err := json.Unmarshal(msg.Payload, &ev); err != nil {
			return bad(err)
		}
		a.stop, a.stopped = ev.StopReason, true
	case "metadata":
		var ev metadataEvent
		if err := json.Unmarshal(msg.Payload, &ev); err != nil {
			return bad(err)
		}
		a.usage = ev.Usage
	}
	return nil
}

// streamException classifies an exception sent inside a 200 stream by the
// status the same exception has over HTTP.
func (p *Provider) streamException(kind string, payload []byte) error {
	status := http.StatusInternalServerError
	switch strings.ToLower(kind) {
	case "throttlingexception":
		status = http.StatusTooManyRequests
	case "serviceunavailableexception":
		status = http.StatusServiceUnavailable
	case "validationexception":
		status = http.StatusBadRequest
	case "modelstreamerrorexception":
		status = http.StatusFailedDependency
	}
	pe := providers.HTTPError(p.name, status, nil, payload, p.opts.APIKey)
	pe.StatusCode = 0
	pe.Message = kind + ": " + pe.Message
	return pe
}

// do builds, signs and sends one request; a non-2xx answer becomes a
// classified error.
func (p *Provider) do(t *calltimer.Timer, req providers.ChatRequest, op, accept string) (*http.Response, error) {
	requestError := func(err error) error {
		return &providers.Error{Provider: p.name, Message: err.Error(), Err: err}
	}
	if req.Model == "" {
		return nil, requestError(errors.New("request has no model"))
	}
	body, err := p.buildRequest(req)
	if err != nil {
		return nil, requestError(err)
	}
	raw, err := body.marshal()
	if err != nil {
		return nil, requestError(err)
	}
	region, err := p.chain.region(p.opts.Region)
	if err != nil && (p.opts.APIBase == "" || p.bearer() == "") {
		return nil, requestError(err)
	}
	base := p.opts.APIBase
	if base == "" {
		base = "https://bedrock-runtime." + region + ".amazonaws.com"
	}
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil {
		return nil, requestError(fmt.Errorf("endpoint %q: %w", base, err))
	}
	// The model id (an ARN may hold ':' and '/') is one path segment.
	id := escapeSegment(req.Model)
	u.RawPath = u.EscapedPath() + "/model/" + id + "/" + op
	u.Path, _ = url.PathUnescape(u.RawPath)

	hreq, err := http.NewRequestWithContext(t.Context(), http.MethodPost, u.String(), bytes.NewReader(raw))
	if err != nil {
		return nil, requestError(err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", accept)
	for k, v := range p.opts.ExtraHeaders {
		hreq.Header.Set(k, v)
	}
	if token := p.bearer(); token != "" {
		hreq.Header.Set("Authorization", "Bearer "+token)
	} else {
		creds, _, err := p.chain.credentials()
		if err != nil {
			return nil, requestError(err)
		}
		sum := sha256.Sum256(raw)
		if err := p.signer.SignHTTP(t.Context(), creds, hreq, hex.EncodeToString(sum[:]), signingName, region, time.Now()); err != nil {
			return nil, requestError(fmt.Errorf("sign request: %w", err))
		}
	}
	res, err := p.client.Do(hreq)
	if err != nil {
		if pe := t.Classify(p.name); pe != nil {
			return nil, pe
		}
		return nil, providers.NetworkError(p.name, err, p.opts.APIKey)
	}
	if res.StatusCode/100 != 2 {
		defer res.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		pe := providers.HTTPError(p.name, res.StatusCode, res.Header, b, p.opts.APIKey, p.bearer())
		if kind, _, _ := strings.Cut(res.Header.Get("X-Amzn-Errortype"), ":"); kind != "" {
			pe.Message = kind + ": " + pe.Message
		}
		return nil, pe
	}
	return res, nil
}

// bearer is the Bedrock API key: the config's, else AWS_BEARER_TOKEN_BEDROCK.
func (p *Provider) bearer() string {
	if p.opts.APIKey != "" {
		return p.opts.APIKey
	}
	return p.opts.Getenv("AWS_BEARER_TOKEN_BEDROCK")
}

// escapeSegment percent-encodes everything but the unreserved characters,
// as AWS encodes a path label.
func escapeSegment(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
