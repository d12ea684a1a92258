// Package langfuse sends traces to Langfuse (https://langfuse.com) through
// its public ingestion API (POST <host>/api/public/ingestion, HTTP basic
// auth with the public and secret keys), as the Python nanobot does when
// LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY are set.
//
// A Client is an agent.RunObserver: every provider call becomes a
// generation (model, provider, token usage, cost when priced, latency,
// error level) in the trace of its turn, and every tool call a span. A
// turn's trace id is derived from the session and the message being
// answered, so all the calls of one turn share it; the trace carries the
// session id, the sender as user id, and the channel. Prompts and answers
// are not sent: only what the usage ledger records.
//
// Events are queued and sent in batches by one background goroutine (Run);
// an observation never blocks the turn. A full queue drops new events, and
// a batch the host refuses or cannot take (down, unreachable) is dropped
// with a log line; nothing is retried or kept on disk. Close sends what is
// queued, bounded by its context.
//
// ObserveLLM and ObserveTool are safe for concurrent use; Run is called
// once.
package langfuse

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/tools"
)

// DefaultHost is Langfuse Cloud.
const DefaultHost = "https://cloud.langfuse.com"

// Options configure a Client.
type Options struct {
	// Host is the Langfuse server (DefaultHost when empty).
	Host string
	// PublicKey and SecretKey authenticate (pk-lf-..., sk-lf-...).
	PublicKey, SecretKey string
	// FlushInterval is the longest an event waits before it is sent (1 s).
	FlushInterval time.Duration
	// BatchSize sends a batch as soon as this many events wait (50).
	BatchSize int
	// QueueSize bounds the events waiting to be sent (2000); more are
	// dropped.
	QueueSize int
	// HTTPClient sends the batches (a client with a 10 s timeout when nil).
	HTTPClient *http.Client
	// Log receives the drop lines; nil discards.
	Log *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// FromEnv reads the Langfuse variables: LANGFUSE_PUBLIC_KEY,
// LANGFUSE_SECRET_KEY and LANGFUSE_BASE_URL (or LANGFUSE_HOST). ok is
// false when the keys are not both set; missing says which one is
// missing when only one is.
func FromEnv(getenv func(string) string) (o Options, ok bool, missing string) {
	o.PublicKey, o.SecretKey = strings.TrimSpace(getenv("LANGFUSE_PUBLIC_KEY")), strings.TrimSpace(getenv("LANGFUSE_SECRET_KEY"))
	o.Host = strings.TrimSpace(getenv("LANGFUSE_BASE_URL"))
	if o.Host == "" {
		o.Host = strings.TrimSpace(getenv("LANGFUSE_HOST"))
	}
	switch {
	case o.PublicKey != "" && o.SecretKey != "":
		return o, true, ""
	case o.PublicKey != "":
		return o, false, "LANGFUSE_SECRET_KEY"
	case o.SecretKey != "":
		return o, false, "LANGFUSE_PUBLIC_KEY"
	}
	return o, false, ""
}

// Client batches events to one Langfuse project.
type Client struct {
	opts     Options
	endpoint string
	log      *slog.Logger
	queue    chan event
	done     chan struct{} // closed when Run returns
	closing  chan struct{} // closed by Close: flush and stop

	mu         sync.Mutex
	dropped    int                 // events dropped on a full queue since the last log line
	seenTraces map[string]struct{} // traces already created (bounded)
	closeOnce  sync.Once
}

var _ agent.RunObserver = (*Client)(nil)

// New builds a client; it does no IO. Call Run to start sending.
func New(o Options) (*Client, error) {
	if o.Host == "" {
		o.Host = DefaultHost
	}
	u, err := url.Parse(strings.TrimRight(o.Host, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("langfuse: host %q: want http(s)://host", o.Host)
	}
	if o.PublicKey == "" || o.SecretKey == "" {
		return nil, fmt.Errorf("langfuse: LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY are both needed")
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = time.Second
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 50
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 2000
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Client{
		opts: o, endpoint: u.String() + "/api/public/ingestion", log: o.Log.With("component", "langfuse"),
		queue: make(chan event, o.QueueSize), done: make(chan struct{}), closing: make(chan struct{}),
		seenTraces: map[string]struct{}{},
	}, nil
}

// event is one ingestion event.
type event struct {
	ID        string         `json:"id"`
	Type      string         `json:"type"`
	Timestamp string         `json:"timestamp"`
	Body      map[string]any `json:"body"`
}

// Run sends batches until Close; it returns after the last flush. ctx
// ending stops it at once, dropping what is queued.
func (c *Client) Run(ctx context.Context) {
	defer close(c.done)
	t := time.NewTicker(c.opts.FlushInterval)
	defer t.Stop()
	var batch []event
	send := func(ctx context.Context) {
		if len(batch) > 0 {
			c.send(ctx, batch)
			batch = batch[:0]
		}
		c.logDropped()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.closing:
			for {
				select {
				case ev := <-c.queue:
					batch = append(batch, ev)
					if len(batch) >= c.opts.BatchSize {
						send(ctx)
					}
					continue
				default:
				}
				break
			}
			send(ctx)
			return
		case ev := <-c.queue:
			batch = append(batch, ev)
			if len(batch) >= c.opts.BatchSize {
				send(ctx)
			}
		case <-t.C:
			send(ctx)
		}
	}
}

// Close asks Run to send what is queued and waits for Run to return, at
// most until ctx ends. Safe to call more than once.
func (c *Client) Close(ctx context.Context) {
	c.closeOnce.Do(func() { close(c.closing) })
	select {
	case <-c.done:
	case <-ctx.Done():
	}
}

// enqueue never blocks: a full queue drops the event.
func (c *Client) enqueue(evs ...event) {
	for _, ev := range evs {
		select {
		case c.queue <- ev:
		default:
			c.mu.Lock()
			c.dropped++
			c.mu.Unlock()
		}
	}
}

func (c *Client) logDropped() {
	c.mu.Lock()
	n := c.dropped
	c.dropped = 0
	c.mu.Unlock()
	if n > 0 {
		c.log.Warn("langfuse: queue full; events dropped", "events", n)
	}
}

// send posts one batch; failures are logged and the batch dropped.
func (c *Client) send(ctx context.Context, batch []event) {
	body, err := json.Marshal(map[string]any{"batch": batch})
	if err != nil {
		c.log.Warn("langfuse: encoding a batch failed; dropped", "events", len(batch), "err", err)
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		c.log.Warn("langfuse: dropped a batch", "events", len(batch), "err", err)
		return
	}
	req.SetBasicAuth(c.opts.PublicKey, c.opts.SecretKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		c.log.Warn("langfuse: host unreachable; batch dropped", "events", len(batch), "err", err)
		return
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
	switch {
	case res.StatusCode == http.StatusMultiStatus:
		var r struct {
			Errors []struct {
				ID      string `json:"id"`
				Status  int    `json:"status"`
				Message string `json:"message"`
			} `json:"errors"`
		}
		if json.Unmarshal(msg, &r) == nil && len(r.Errors) > 0 {
			c.log.Warn("langfuse: events refused", "events", len(r.Errors), "first_status", r.Errors[0].Status, "first_error", r.Errors[0].Message)
		}
	case res.StatusCode/100 != 2:
		c.log.Warn("langfuse: batch refused; dropped", "events", len(batch), "status", res.StatusCode, "body", strings.TrimSpace(string(msg)))
	}
}

// ObserveLLM implements agent.RunObserver: a generation in the turn's trace.
func (c *Client) ObserveLLM(ctx context.Context, call agent.LLMCall) {
	end := c.opts.Now().UTC()
	start := end.Add(-call.Duration)
	trace := c.traceEvents(ctx, call.Agent, end)
	u := call.Usage
	body := map[string]any{
		"id": newID(), "traceId": trace.id, "name": "llm." + call.Provider,
		"startTime": stamp(start), "endTime": stamp(end), "model": call.Model,
		"usage":        map[string]any{"input": u.PromptTokens, "output": u.CompletionTokens, "total": u.PromptTokens + u.CompletionTokens, "unit": "TOKENS"},
		"usageDetails": map[string]any{"input": u.PromptTokens, "output": u.CompletionTokens, "cache_read_input_tokens": u.CacheReadTokens, "cache_creation_input_tokens": u.CacheWriteTokens, "reasoning_tokens": u.ReasoningTokens},
		"metadata":     map[string]any{"provider": call.Provider, "agent": call.Agent, "estimated_usage": call.Estimated},
		"level":        "DEFAULT",
	}
	if call.CostUSD != nil {
		body["costDetails"] = map[string]any{"total": *call.CostUSD}
	}
	if call.Err != nil {
		body["level"], body["statusMessage"] = "ERROR", call.Err.Error()
	}
	c.enqueue(append(trace.events, event{ID: newID(), Type: "generation-create", Timestamp: stamp(end), Body: body})...)
}

// ObserveTool implements agent.RunObserver: a span in the turn's trace.
func (c *Client) ObserveTool(ctx context.Context, t agent.ToolCall) {
	end := c.opts.Now().UTC()
	trace := c.traceEvents(ctx, "", end)
	body := map[string]any{
		"id": newID(), "traceId": trace.id, "name": "tool." + t.Name,
		"startTime": stamp(end.Add(-t.Duration)), "endTime": stamp(end), "level": "DEFAULT",
	}
	if t.Failed {
		body["level"] = "ERROR"
	}
	c.enqueue(append(trace.events, event{ID: newID(), Type: "span-create", Timestamp: stamp(end), Body: body})...)
}

type traceRef struct {
	id     string
	events []event // the trace-create, the first time the trace is seen
}

// maxSeenTraces bounds the memory of created traces; past it the set is
// reset (a trace-create is an upsert: sending it again is harmless).
const maxSeenTraces = 4096

// traceEvents returns the turn's trace id and, the first time, the event
// creating it.
func (c *Client) traceEvents(ctx context.Context, agentName string, now time.Time) traceRef {
	cc, _ := tools.CallContextFrom(ctx)
	if cc.MessageID == "" {
		// No message to anchor the turn (a cron or heartbeat turn without
		// one): the call gets a trace of its own.
		return c.newTrace(newID(), cc, agentName, now)
	}
	sum := sha256.Sum256([]byte(cc.SessionKey + "\x00" + cc.Channel + "\x00" + cc.ChatID + "\x00" + cc.MessageID))
	id := hex.EncodeToString(sum[:16])
	c.mu.Lock()
	_, seen := c.seenTraces[id]
	if !seen {
		if len(c.seenTraces) >= maxSeenTraces {
			clear(c.seenTraces)
		}
		c.seenTraces[id] = struct{}{}
	}
	c.mu.Unlock()
	if seen {
		return traceRef{id: id}
	}
	return c.newTrace(id, cc, agentName, now)
}

func (c *Client) newTrace(id string, cc tools.CallContext, agentName string, now time.Time) traceRef {
	name := "turn"
	if cc.Channel != "" {
		name = "turn." + cc.Channel
	}
	source := cc.Source
	if source == "" {
		source = "user"
	}
	body := map[string]any{
		"id": id, "name": name, "timestamp": stamp(now),
		"metadata": map[string]any{"channel": cc.Channel, "chat_id": cc.ChatID, "message_id": cc.MessageID, "source": source, "agent": agentName},
	}
	if cc.SessionKey != "" {
		body["sessionId"] = cc.SessionKey
	}
	if cc.SenderID != "" {
		body["userId"] = cc.SenderID
	}
	return traceRef{id: id, events: []event{{ID: newID(), Type: "trace-create", Timestamp: stamp(now), Body: body}}}
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// newID is a random UUID (version 4).
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
