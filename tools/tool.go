// Package tools owns what the agent can do: the Tool interface, the Registry
// that hands definitions to the provider and executes calls, and the
// tolerant-cast-then-strict-validate treatment of the arguments a model sends.
// Built-in tools live in sub-packages (shell, fs, web, message, spawn, cron,
// mcp); every child process they start goes through tools/sandbox.
//
// Concurrency: a Registry is safe for concurrent use, and tools may be
// registered and unregistered (MCP servers connect late) while calls
// execute; Execute holds no lock while a tool runs. The agent runs the tool
// calls of one turn in parallel and turns of different sessions at once, so
// a Tool's Execute must be safe for concurrent use; a Turn's methods are.
package tools

import (
	"context"
	"strings"
	"sync"
)

// Tool is one capability offered to the model.
type Tool interface {
	// Name is the function name the model calls (^[a-zA-Z0-9_-]{1,64}$).
	Name() string
	// Description tells the model when and how to use the tool.
	Description() string
	// Parameters is the JSON Schema (type "object") of the arguments.
	Parameters() map[string]any
	// Execute runs the call. args are already cast and validated against
	// Parameters. A returned error is shown to the model as the tool result
	// (with a retry hint); it never ends the turn.
	Execute(ctx context.Context, args map[string]any) (Result, error)
}

// Result is what a successful tool call returns to the model.
type Result struct {
	// Content is the text the model sees.
	Content string
	// Images are returned to multimodal models as image parts.
	Images []Image
}

// Image is binary image content with its MIME type.
type Image struct {
	MIMEType string
	Data     []byte
}

// Definition is a tool as described to the provider.
type Definition struct {
	Name        string
	Description string
	Parameters  map[string]any
}

// CallContext is the conversation a tool call belongs to. Tools that act on
// the conversation (message, spawn, cron) read it with CallContextFrom.
type CallContext struct {
	Channel    string
	ChatID     string
	SessionKey string
	// MessageID is the platform id of the inbound message being answered.
	MessageID string
	// FromCron is true inside a cron-triggered turn.
	FromCron bool
	// SubAgent is true inside a sub-agent's run.
	SubAgent bool
	// SenderID is the author of the message being answered.
	SenderID string
	// Source says who produced that message: "user", "cron", "heartbeat",
	// "subagent" or "api" (bus.Source.String()); the usage ledger records it.
	Source string
	// Admin is set when the channel vouches for the sender as an admin
	// (bus.Inbound.Admin); budgets may exempt them.
	Admin bool
}

type callContextKey struct{}

// WithCallContext attaches the conversation to ctx.
func WithCallContext(ctx context.Context, cc CallContext) context.Context {
	return context.WithValue(ctx, callContextKey{}, cc)
}

// CallContextFrom returns the conversation attached to ctx, if any.
func CallContextFrom(ctx context.Context) (CallContext, bool) {
	cc, ok := ctx.Value(callContextKey{}).(CallContext)
	return cc, ok
}

// Turn is per-turn state shared by the tools of one turn and the agent loop.
// Its methods are safe for concurrent use (tool calls run in parallel).
type Turn struct {
	mu   sync.Mutex
	sent []string
}

type turnKey struct{}

// WithTurn attaches turn state to ctx.
func WithTurn(ctx context.Context, t *Turn) context.Context {
	return context.WithValue(ctx, turnKey{}, t)
}

// TurnFrom returns the turn state attached to ctx, or nil.
func TurnFrom(ctx context.Context) *Turn {
	t, _ := ctx.Value(turnKey{}).(*Turn)
	return t
}

// RecordSent notes text the message tool sent to the current chat.
func (t *Turn) RecordSent(text string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sent = append(t.sent, strings.TrimSpace(text))
}

// SentAny reports whether the message tool sent anything to the current
// chat in this turn.
func (t *Turn) SentAny() bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.sent) > 0
}

// AlreadySent reports whether text was already sent to the current chat by
// the message tool in this turn.
func (t *Turn) AlreadySent(text string) bool {
	if t == nil {
		return false
	}
	text = strings.TrimSpace(text)
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.sent {
		if s == text {
			return true
		}
	}
	return false
}
