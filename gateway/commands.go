package gateway

import (
	"slices"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/gateway/relay"
)

// chatCommands are the chat commands this gateway answers, for channels
// that show a command menu (channels.Deps.Commands): the agent's, the
// answers to approval requests when approvals are on, and the gate's
// /pairing, which /help also shows only to admins.
func (g *Gateway) chatCommands() []bus.Command {
	cmds := slices.Clone(agent.Commands)
	if g.o.Approvals != nil {
		cmds = append(cmds, agent.ApprovalCommands...)
	}
	return append(cmds, relay.PairingCommand)
}
