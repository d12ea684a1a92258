package agent

import (
	"github.com/nanobot-go/nanobot/bus"
)

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
