package agent

import (
	"github.com/nanobot-go/nanobot/bus"
)

// ApprovalCommands are the answers to approval requests, handled when
// the loop has an approval broker (LoopConfig.Approvals).
var ApprovalCommands = []bus.Command{
	{Name: "approve", Help: "run a command the agent asked for: /approve ID, or /approve ID always (admins)",
		Args: []bus.CommandArg{{Name: "id", Help: "the request's id", Required: true}, {Name: "always", Help: "always: allow it from now on", Choices: []string{"always"}}}},
	{Name: "deny", Help: "refuse a command the agent asked for: /deny ID (admins)",
		Args: []bus.CommandArg{{Name: "id", Help: "the request's id", Required: true}}},
}

// answerApproval applies an admin's "/approve ID [always]" or "/deny ID"
// and returns the reply. It runs in Submit, not in the chat's queue: the
// turn that asked is waiting for exactly this message.
func (l *Loop) answerApproval(m bus.Inbound) string {
	if !m.Admin {
		l.log.Warn("approval answer from a non-admin refused", "channel", m.Channel, "sender", m.SenderID)
		return "Only an admin can answer approval requests."
	}
	reply, _ := l.cfg.Approvals.AnswerCommand(m.Content, m.Channel+":"+m.SenderID)
	return reply
}
