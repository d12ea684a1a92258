package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// Gate is the Inbox in front of the agent: it admits senders on a channel's
// allowFrom list or approved by pairing, runs the pairing conversation with
// unknown senders in direct chats, handles "/pairing approve CODE" from
// admins (with a back-off after wrong codes), and drops unknown senders in
// groups with a log line. It marks admitted messages from admins with
// bus.Inbound.Admin.
//
// Deliver may be called concurrently by every channel.
type Gate struct {
	// AllowFrom maps a channel to its allow-list: empty means nobody, "*"
	// everyone, otherwise sender ids (an id "123|alice" matches "123" or
	// "alice").
	AllowFrom map[string][]string
	// Admins maps a channel to the senders who may run state-changing
	// commands (same matching as AllowFrom; "*" matches nobody). A channel
	// with no admins falls back to the senders named in its AllowFrom (a
	// "*" there makes nobody admin). Channels may also vouch for a message
	// themselves by setting bus.Inbound.Admin.
	Admins  map[string][]string
	Pairing *PairingStore
	// Next receives admitted messages.
	Next channels.Inbox
	// Reply sends the gate's own messages (pairing codes, approvals);
	// one it fails to send is logged at warn.
	Reply func(ctx context.Context, m bus.Outbound) error
	Log   *slog.Logger

	mu       sync.RWMutex // guards AllowFrom, Admins and attempts after start
	attempts *attemptLimiter
}

// SetAllowFrom replaces the allow-lists while the gateway runs (config
// reload on SIGHUP).
func (g *Gate) SetAllowFrom(allow map[string][]string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.AllowFrom = allow
}

// SetAdmins replaces the admin lists while the gateway runs.
func (g *Gate) SetAdmins(admins map[string][]string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.Admins = admins
}

// Deliver implements Inbox.
func (g *Gate) Deliver(ctx context.Context, m bus.Inbound) error {
	if g.allowed(m.Channel, m.SenderID) {
		m.Admin = m.Admin || g.isAdmin(m.Channel, m.SenderID)
		switch name, args := parsePairingCommand(m.Content); name {
		case "approve":
			g.approve(ctx, m, args)
			return nil
		case "list", "deny", "revoke":
			g.managePairing(ctx, m, name, args)
			return nil
		}
		return g.Next.Deliver(ctx, m)
	}
	log := g.logger().With("channel", m.Channel, "sender", m.SenderID)
	if m.IsGroup || g.Pairing == nil {
		log.Info("message from a sender not on allowFrom dropped", "group", m.IsGroup)
		return channels.ErrDenied
	}
	code, created, err := g.Pairing.Request(m.Channel, m.SenderID, m.ChatID)
	switch {
	case errors.Is(err, ErrTooManyPending):
		log.Warn("pairing request refused: too many pending")
		return channels.ErrDenied
	case err != nil:
		log.Error("pairing request failed", "err", err)
		return channels.ErrDenied
	}
	if created {
		log.Info("pairing code issued; approve with `nanobot pairing approve "+code+"`", "code", code)
		text := fmt.Sprintf("Hi! I only talk to people my owner approved. Your pairing code is %s — ask the owner to run `nanobot pairing approve %s` (it expires in an hour).", code, code)
		g.reply(ctx, "pairing code", m.SenderID, bus.Outbound{Channel: m.Channel, ChatID: m.ChatID, Kind: bus.KindMessage, Content: text, Final: true})
	}
	return channels.ErrDenied
}

// Admits implements Admitter: the sender is on the channel's allow-list or
// approved by pairing.
func (g *Gate) Admits(channel, senderID string) bool { return g.allowed(channel, senderID) }

func (g *Gate) logger() *slog.Logger {
	if g.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return g.Log
}

func (g *Gate) allowed(channel, sender string) bool {
	g.mu.RLock()
	list := g.AllowFrom[channel]
	g.mu.RUnlock()
	for _, a := range list {
		if a == "*" {
			return true
		}
	}
	if matchAny(list, sender) {
		return true
	}
	return g.Pairing != nil && g.Pairing.IsApproved(channel, sender)
}

// isAdmin reports whether an allowed sender is on the channel's admins, or,
// when the channel has none, named explicitly in its allowFrom.
func (g *Gate) isAdmin(channel, sender string) bool {
	g.mu.RLock()
	admins, allow := g.Admins[channel], g.AllowFrom[channel]
	g.mu.RUnlock()
	if len(admins) > 0 {
		return matchAny(slices.DeleteFunc(slices.Clone(admins), isWildcard), sender)
	}
	return matchAny(slices.DeleteFunc(slices.Clone(allow), isWildcard), sender)
}

func isWildcard(s string) bool { return strings.TrimSpace(s) == "*" }

func (g *Gate) limiter() *attemptLimiter {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.attempts == nil {
		g.attempts = newAttemptLimiter(nil)
	}
	return g.attempts
}

// approve runs "/pairing approve CODE": admins only, and a sender who keeps
// sending wrong codes is refused without a check until its back-off ends.
func (g *Gate) approve(ctx context.Context, m bus.Inbound, code string) {
	log := g.logger().With("channel", m.Channel, "sender", m.SenderID)
	text := ""
	switch {
	case !m.Admin:
		log.Warn("pairing approve from a non-admin refused")
		text = "Only an admin can approve pairing codes."
	case g.Pairing == nil:
		text = "Pairing is not enabled."
	default:
		p, failed := g.resolveCode(m, "approve", code, g.Pairing.Approve)
		if failed != "" {
			text = failed
			break
		}
		log.Info("pairing approved from chat", "approved_channel", p.Channel, "approved_sender", p.SenderID)
		text = fmt.Sprintf("Approved %s on %s.", p.SenderID, p.Channel)
		g.reply(ctx, "approval notice", p.SenderID, bus.Outbound{Channel: p.Channel, ChatID: p.ChatID, Kind: bus.KindMessage, Content: "You're approved — say hi!", Final: true})
	}
	g.reply(ctx, "pairing approve answer", m.SenderID, answerTo(m, text))
}

// resolveCode approves or denies (verb, resolve) the request behind code
// for m's sender, who is refused without a check while backing off after
// wrong codes. failed is the answer when it did not work, "" when it did.
func (g *Gate) resolveCode(m bus.Inbound, verb, code string, resolve func(string) (PendingPairing, error)) (p PendingPairing, failed string) {
	log := g.logger().With("channel", m.Channel, "sender", m.SenderID)
	key := m.Channel + "\x00" + m.SenderID
	lim := g.limiter()
	if wait := lim.wait(key); wait > 0 {
		log.Warn("pairing "+verb+" refused: too many wrong codes", "retry_in", wait.Round(time.Second))
		return p, fmt.Sprintf("Too many wrong pairing codes. Try again in %s.", roundUp(wait))
	}
	p, err := resolve(code)
	switch {
	case errors.Is(err, ErrUnknownCode):
		failed = "Could not " + verb + ": " + err.Error() + "."
		if wait := lim.fail(key); wait > 0 {
			log.Warn("pairing "+verb+": wrong code; backing off", "retry_in", wait)
			failed += fmt.Sprintf(" Too many wrong codes: try again in %s.", roundUp(wait))
		}
	case err != nil:
		log.Error("pairing "+verb+" failed", "err", err)
		failed = "Could not " + verb + ": the pairing store failed; see the gateway log."
	default:
		lim.succeed(key)
	}
	return p, failed
}

// reply sends one of the gate's own messages to sender. The gate is the
// only one who knows it was meant to go out, so a failure is logged here:
// otherwise a stranger waits for a pairing code, or an approved sender for
// the word, that never comes. The text is not logged (what says which
// message it was); the platform's own send failures are logged and counted
// again by the dispatcher, this covers the queue refusing it too.
func (g *Gate) reply(ctx context.Context, what, sender string, m bus.Outbound) {
	if g.Reply == nil {
		return
	}
	if err := g.Reply(ctx, m); err != nil {
		g.logger().Warn("access: reply not sent", "reply", what, "channel", m.Channel, "chat_id", m.ChatID, "sender", sender, "err", err)
	}
}

// answerTo is the gate's answer to the command m: in m's chat and thread,
// replying to it, with its metadata, as the agent answers, so a channel
// that answers a command in place (a Discord slash command) can find it.
func answerTo(m bus.Inbound, text string) bus.Outbound {
	return bus.Outbound{
		Channel: m.Channel, ChatID: m.ChatID, Kind: bus.KindMessage, Content: text, Final: true,
		ReplyTo: m.MessageID, ThreadID: m.ThreadID, SessionKey: m.Key(), Metadata: m.Metadata,
	}
}

// parsePairingCommand parses "/pairing approve CODE".
func parsePairingCommand(text string) (string, string) {
	f := strings.Fields(text)
	if len(f) < 2 || !strings.EqualFold(strings.SplitN(f[0], "@", 2)[0], "/pairing") {
		return "", ""
	}
	args := ""
	if len(f) > 2 {
		args = f[2]
	}
	return strings.ToLower(f[1]), args
}

// matchAny reports whether an entry of list names sender (bus.SenderMatches:
// the one way a sender is written everywhere).
func matchAny(list []string, sender string) bool {
	for _, a := range list {
		if bus.SenderMatches(a, sender) {
			return true
		}
	}
	return false
}

// roundUp shows a wait in whole seconds, never "0s".
func roundUp(d time.Duration) time.Duration {
	return max((d+time.Second-1)/time.Second, 1) * time.Second
}
