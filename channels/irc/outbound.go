package irc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ergochat/irc-go/ircmsg"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// Room assumed for the parts of the relay prefix the bot cannot be sure
// of: the user name (servers prefix "~" when ident fails and cut it to
// USERLEN) and the host (HOSTLEN is 63 on most servers; cloaks and vhosts
// can change it after connecting).
const (
	assumeUser = 12
	assumeHost = 63
)

// Send implements channels.Channel: the text as PRIVMSG lines to the chat
// (a channel or a nick), cut at newlines and at the line limit, each line
// waiting for a flood token. It fails while the bot is not connected; when
// the connection breaks after some lines went out, the error is permanent
// so that a retry does not repeat them.
//
// IRC has no message ids: the returned MessageID is a hash of the target
// and the first line's text (see LineID), which is all an IRC client could
// use to recognise the line.
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	target := m.ChatID
	if target == "" || strings.ContainsAny(target, " ,\r\n\x00") {
		return channels.MessageRef{}, channels.Permanentf("irc: send: %q is not a nick or channel", target)
	}
	cn := c.current()
	if cn == nil {
		return channels.MessageRef{}, fmt.Errorf("irc: send to %s: %w", target, errNotConnected)
	}
	lines := splitLines(m.Content, c.lineBudget(cn, target))
	if len(lines) == 0 {
		return channels.MessageRef{}, channels.Permanentf("irc: send to %s: empty message", target)
	}
	for i, line := range lines {
		err := c.flood.take(ctx)
		if err == nil {
			msg := ircmsg.MakeMessage(nil, "", "PRIVMSG", target, line)
			msg.ForceTrailing()
			err = cn.write(msg)
		}
		if err == nil {
			c.written.Add(1)
		}
		if err != nil {
			err = fmt.Errorf("irc: send to %s: %w", target, err)
			if i > 0 {
				return channels.MessageRef{}, channels.Permanentf("%w (after %d of %d lines)", err, i, len(lines))
			}
			return channels.MessageRef{}, err
		}
	}
	return channels.MessageRef{ChatID: target, MessageID: LineID(target, lines[0])}, nil
}

// LineID names a sent line: the first 16 hex digits of SHA-256 over the
// target, a NUL and the text.
func LineID(target, text string) string {
	sum := sha256.Sum256([]byte(target + "\x00" + text))
	return hex.EncodeToString(sum[:8])
}

// lineBudget is how many bytes of text fit in one PRIVMSG to target once
// the server relays it as ":nick!user@host PRIVMSG target :text\r\n",
// assuming the longest user and host unless the real ones are longer.
func (c *Channel) lineBudget(cn *conn, target string) int {
	user, host := cn.mask()
	nick := max(len(cn.currentNick()), len(c.cfg.Nick))
	prefix := 1 + nick + 1 + max(len(user), assumeUser) + 1 + max(len(host), assumeHost) +
		len(" PRIVMSG ") + len(target) + len(" :")
	return maxLine - len("\r\n") - prefix
}

// splitLines cuts text into IRC lines: one per line of text (empty lines
// are dropped, IRC cannot send them), and lines over budget bytes cut into
// pieces on UTF-8 boundaries, before the last space of the piece when
// there is one in its second half. Concatenating the pieces of a line gives the
// line back exactly. Trailing spaces (which servers drop) and NUL bytes are removed, and invalid
// UTF-8 is replaced.
func splitLines(text string, budget int) []string {
	if budget < utf8.UTFMax {
		budget = utf8.UTFMax
	}
	text = strings.ToValidUTF8(strings.ReplaceAll(text, "\x00", ""), "\uFFFD")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var out []string
	for line := range strings.SplitSeq(strings.ReplaceAll(text, "\r", "\n"), "\n") {
		line = strings.TrimRight(line, " ")
		for len(line) > budget {
			cut := budget
			for cut > 0 && !utf8.RuneStart(line[cut]) {
				cut--
			}
			// Cut before a space: servers drop trailing spaces, a
			// leading one arrives.
			// (Never at the very start: that cut would make no progress.)
			if i := strings.LastIndexByte(line[:cut], ' '); i > 0 && i >= cut/2 {
				cut = i
			}
			out = append(out, line[:cut])
			line = line[cut:]
		}
		if line != "" {
			out = append(out, line)
		}
	}
	return out
}
