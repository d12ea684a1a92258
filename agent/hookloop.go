// The loop's hook points: a message accepted, a reply about to be sent, a
// turn over, a session reset. Each runs on the session's own worker (or
// the goroutine publishing for it), never under l.mu.

package agent

import (
	"context"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/tools"
)

// inboundHooks asks the inbound hooks about each of the turn's messages:
// a vetoed one is dropped (done with the turn, unanswered), a modified one
// runs with the hook's text. It reports whether anything is left to run.
func (l *Loop) inboundHooks(ctx context.Context, ts *turnState) bool {
	kept := ts.members[:0:0]
	for _, m := range ts.members {
		v := l.cfg.Hooks.Run(ctx, inboundEvent(HookInbound, m, map[string]any{
			"text": m.Content, "message_id": m.MessageID, "source": m.Source.String(), "media": len(m.Media),
		}))
		if v.Veto {
			l.log.Info("message dropped by an inbound hook", "session", m.Key(), "message_id", m.MessageID, "reason", v.Reason)
			ts.dropped = append(ts.dropped, m)
			if m.Source == bus.SourceAPI {
				// A chat gets no answer; an API request waits for one
				// (holding its slot), so it is told it was refused.
				l.publish(ctx, m, bus.Outbound{Kind: bus.KindMessage, Content: (&HookVetoError{Point: HookInbound}).UserMessage(), Final: true, IsError: true})
			}
			continue
		}
		if text, ok := hookString(v, "text"); ok {
			m.Content = text
		}
		kept = append(kept, m)
	}
	ts.members = kept
	return len(kept) > 0
}

// isReply reports whether out is text a chat shows as the agent's
// message (not a delta, hint or typing, nor the end of an interrupted
// stream, which repeats what was shown).
func isReply(out bus.Outbound) bool {
	return (out.Kind == bus.KindMessage || (out.Kind == bus.KindStreamEnd && !out.Interrupted)) && out.Content != ""
}

// replyHooks asks the before_reply hooks about out and returns the text
// to send: the hooks' rewrite, or a notice when one vetoed.
func (l *Loop) replyHooks(ctx context.Context, m bus.Inbound, out bus.Outbound) string {
	v := l.cfg.Hooks.Run(ctx, inboundEvent(HookBeforeReply, m, map[string]any{
		"text": out.Content, "final": out.Final, "error": out.IsError,
	}))
	if v.Veto {
		l.log.Info("reply withheld by a hook", "session", m.Key(), "reason", v.Reason)
		return withheldNotice
	}
	if text, ok := hookString(v, "text"); ok {
		// A hook's text is masked like the model's: a hook cannot put
		// back a secret the redactor took out.
		if l.cfg.Runner != nil {
			text = l.cfg.Runner.Redact.Secrets(text)
		}
		return text
	}
	return out.Content
}

// turnEnd is what the turn_end hooks are told about a turn.
type turnEnd struct {
	reply                    string
	calls                    int
	promptTokens, completion int
}

func (e *turnEnd) record(rp *replies, res *RunResult) {
	e.reply = rp.spoken
	if res != nil {
		e.calls, e.promptTokens, e.completion = res.Calls, res.Usage.PromptTokens, res.Usage.CompletionTokens
	}
}

// turnEndHooks tells the turn_end hooks how m's turn ended (observe only).
func (l *Loop) turnEndHooks(ctx context.Context, m bus.Inbound, e *turnEnd, err error) {
	data := map[string]any{
		"reply": e.reply, "model_calls": e.calls,
		"prompt_tokens": e.promptTokens, "completion_tokens": e.completion,
	}
	if err != nil {
		data["error"] = err.Error()
		if l.cfg.Runner != nil {
			data["error"] = l.cfg.Runner.Redact.Secrets(err.Error())
		}
	}
	l.cfg.Hooks.Run(ctx, inboundEvent(HookTurnEnd, m, data))
}

// resetHooks tells the session_reset hooks that sess was set aside.
func (l *Loop) resetHooks(ctx context.Context, sess *session.Session) {
	channel, chat := sess.Origin()
	ev := HookEvent{Point: HookSessionReset, Session: sess.Key, Channel: channel, Chat: chat, Data: map[string]any{"messages": sess.Len()}}
	if cc, ok := tools.CallContextFrom(ctx); ok {
		ev.Sender = cc.SenderID
	}
	l.cfg.Hooks.Run(context.WithoutCancel(ctx), ev)
}
