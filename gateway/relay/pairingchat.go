package relay

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/bus"
)

// PairingCommand is the Gate's chat command, for command menus
// (bus.Command): "/pairing list|approve CODE|deny CODE|revoke CHANNEL:SENDER".
var PairingCommand = bus.Command{
	Name: "pairing", Help: "manage who may talk to the bot: list, approve CODE, deny CODE, revoke CHANNEL:SENDER (admins)",
	Args: []bus.CommandArg{
		{Name: "action", Help: "what to do", Choices: []string{"list", "approve", "deny", "revoke"}, Required: true},
		{Name: "target", Help: "a pairing code, or CHANNEL:SENDER to revoke"},
	},
}

// managePairing runs "/pairing list", "/pairing deny CODE" and
// "/pairing revoke CHANNEL:SENDER" from a chat: admins only, as approve.
// A wrong code counts against deny's sender like one given to approve.
func (g *Gate) managePairing(ctx context.Context, m bus.Inbound, verb, arg string) {
	log := g.logger().With("channel", m.Channel, "sender", m.SenderID)
	text := ""
	switch {
	case !m.Admin:
		log.Warn("pairing " + verb + " from a non-admin refused")
		text = "Only an admin can manage pairing."
	case g.Pairing == nil:
		text = "Pairing is not enabled."
	case verb == "list":
		text = g.pairingList()
	case verb == "deny":
		p, failed := g.resolveCode(m, "deny", arg, g.Pairing.Deny)
		if failed != "" {
			text = failed
			break
		}
		log.Info("pairing denied from chat", "denied_channel", p.Channel, "denied_sender", p.SenderID)
		text = fmt.Sprintf("Denied %s on %s (they may ask again).", p.SenderID, p.Channel)
	case verb == "revoke":
		channel, sender, ok := strings.Cut(arg, ":")
		if !ok || channel == "" || sender == "" {
			text = "Usage: /pairing revoke CHANNEL:SENDER, as /pairing list shows them (e.g. telegram:123456789)."
			break
		}
		switch err := g.Pairing.Revoke(channel, sender); {
		case errors.Is(err, ErrNotApproved):
			text = fmt.Sprintf("%s on %s was not approved by pairing (senders in allowFrom are changed in the config).", sender, channel)
		case err != nil:
			log.Error("pairing revoke failed", "err", err)
			text = "Could not revoke: the pairing store failed; see the gateway log."
		default:
			log.Info("pairing revoked from chat", "revoked_channel", channel, "revoked_sender", sender)
			text = fmt.Sprintf("Revoked %s on %s: their next message asks for pairing again.", sender, channel)
		}
	}
	g.reply(ctx, "pairing "+verb+" answer", m.SenderID, answerTo(m, text))
}

// pairingList is /pairing list's answer: the codes waiting and the
// senders approved, by channel.
func (g *Gate) pairingList() string {
	var b strings.Builder
	pending := g.Pairing.Pending()
	if len(pending) == 0 {
		b.WriteString("No pairing codes waiting.\n")
	} else {
		b.WriteString("Waiting (approve or deny with /pairing approve|deny CODE):\n")
		for _, p := range pending {
			fmt.Fprintf(&b, "  %s  %s:%s  expires in %s\n", p.Code, p.Channel, p.SenderID, roundUp(time.Until(p.Expires)))
		}
	}
	approved := g.Pairing.Approved()
	if len(approved) == 0 {
		b.WriteString("Nobody approved by pairing yet.")
		return b.String()
	}
	b.WriteString("Approved by pairing (revoke with /pairing revoke CHANNEL:SENDER):\n")
	for _, ch := range slices.Sorted(maps.Keys(approved)) {
		for _, id := range approved[ch] {
			fmt.Fprintf(&b, "  %s:%s\n", ch, id)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
