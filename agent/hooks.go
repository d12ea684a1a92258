package agent

import (
	"context"
	"strings"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/tools"
)

// HookPoint names a place in the agent's work where hooks are asked
// (docs/hooks.md lists each point's data and what a hook may do there).
type HookPoint uint8

// The hook points, in the order a turn meets them.
const (
	// HookInbound: a message was accepted for a session, before its turn
	// (or command) runs. Modify "text"; a veto drops the message.
	HookInbound HookPoint = iota + 1
	// HookBeforeModel: before each model call. Modify "context" (text
	// added to this call's prompt, not stored); a veto fails the turn.
	HookBeforeModel
	// HookAfterModel: after each model call (observe only).
	HookAfterModel
	// HookBeforeTool: before each tool call. Modify "arguments"; a veto
	// refuses the call (the model reads why).
	HookBeforeTool
	// HookAfterTool: after each tool call. Modify "result".
	HookAfterTool
	// HookBeforeReply: before a reply is sent to a chat. Modify "text"; a
	// veto replaces the reply by a short notice. While a hook listens
	// here, replies are not streamed: the hook sees the whole text first.
	HookBeforeReply
	// HookTurnEnd: a model turn is over and saved (observe only).
	HookTurnEnd
	// HookSessionReset: a conversation was set aside (/new, the time to
	// live, the workbench's delete); observe only.
	HookSessionReset
)

var hookPointNames = [...]string{
	HookInbound: "inbound", HookBeforeModel: "before_model", HookAfterModel: "after_model",
	HookBeforeTool: "before_tool", HookAfterTool: "after_tool", HookBeforeReply: "before_reply",
	HookTurnEnd: "turn_end", HookSessionReset: "session_reset",
}

// HookPoints lists every point's name, in order.
func HookPoints() []string { return append([]string(nil), hookPointNames[1:]...) }

func (p HookPoint) String() string {
	if int(p) < len(hookPointNames) && p > 0 {
		return hookPointNames[p]
	}
	return "unknown"
}

// ParseHookPoint returns the point named s.
func ParseHookPoint(s string) (HookPoint, bool) {
	for i, n := range hookPointNames {
		if i > 0 && n == s {
			return HookPoint(i), true
		}
	}
	return 0, false
}

// HookEvent is what hooks are told at a point: who and where, and the
// point's data (JSON-able values).
type HookEvent struct {
	Point                          HookPoint
	Session, Channel, Chat, Sender string
	Data                           map[string]any
}

// HookVerdict is what the hooks of a point decided together.
type HookVerdict struct {
	// Veto is set when a hook vetoed (or failed under the block policy);
	// Reason says why, for the log and, where a point says so, the model.
	Veto   bool
	Reason string
	// Data is the event's data as the hooks left it: set only when one of
	// them modified it.
	Data map[string]any
}

// Hooks are the user's extensions asked at the hook points. Has is cheap
// and does no IO: the agent asks it first, so a point nobody listens at
// costs nothing. Run may block (it runs external programs and HTTP
// calls) but for no longer than its hooks' timeouts; it is called from a
// session's own goroutines (tool calls concurrently), never with a lock
// other sessions need, so it must be safe for concurrent use. Failures are
// handled inside Run by each hook's failure policy.
type Hooks interface {
	Has(p HookPoint) bool
	Run(ctx context.Context, ev HookEvent) HookVerdict
}

// hooking reports whether h listens at p (a nil h listens nowhere).
func hooking(h Hooks, p HookPoint) bool { return h != nil && h.Has(p) }

// HookVetoError is a step a hook vetoed; its UserMessage is what the chat
// is told when it ends a turn.
type HookVetoError struct {
	Point  HookPoint
	Reason string
}

func (e *HookVetoError) Error() string {
	if e.Reason == "" {
		return "vetoed by a hook at " + e.Point.String()
	}
	return "vetoed by a hook at " + e.Point.String() + ": " + e.Reason
}

// UserMessage implements the told-error convention of failureReply.
func (e *HookVetoError) UserMessage() string {
	return "Sorry, I can't answer that: a hook set up by the owner refused it."
}

// runHook fills the who and where of ev from ctx's call context and runs
// the hooks.
func runHook(ctx context.Context, h Hooks, ev HookEvent) HookVerdict {
	if cc, ok := tools.CallContextFrom(ctx); ok {
		ev.Session, ev.Channel, ev.Chat, ev.Sender = cc.SessionKey, cc.Channel, cc.ChatID, cc.SenderID
	}
	return h.Run(ctx, ev)
}

// inboundEvent is ev for a point about message m.
func inboundEvent(p HookPoint, m bus.Inbound, data map[string]any) HookEvent {
	return HookEvent{Point: p, Session: m.Key(), Channel: m.Channel, Chat: m.ChatID, Sender: m.SenderID, Data: data}
}

// hookString reads a modified string field; ok is false when the hook
// left it out or sent another type.
func hookString(v HookVerdict, key string) (string, bool) {
	if v.Data == nil {
		return "", false
	}
	s, ok := v.Data[key].(string)
	return s, ok
}

// withheldNotice replaces a reply a hook vetoed.
const withheldNotice = "(This reply was withheld by a hook set up by the owner.)"

// hookNote is extra prompt text a before_model hook added.
func hookNote(text string) string {
	return "[Context added by a hook]\n" + strings.TrimSpace(text)
}
