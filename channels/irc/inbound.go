package irc

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ergochat/irc-go/ircmsg"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// event is a PRIVMSG as the reader received it, with the nick the bot had
// then.
type event struct {
	msg  ircmsg.Message
	nick string
	at   time.Time
}

// handle turns one PRIVMSG into a delivery, or answers or drops it.
func (c *Channel) handle(ctx context.Context, in channels.Inbox, e event) {
	m, ok := c.toInbound(e)
	if !ok {
		return
	}
	c.deliver(ctx, in, m)
}

// ctcpVersion is the answer to CTCP VERSION.
const ctcpVersion = "nanobot (https://github.com/nanobot-go/nanobot)"

// toInbound converts a PRIVMSG. It reports false for what the bot does not
// answer: its own lines, CTCP (VERSION is answered here), channel messages
// the group policy leaves out, and malformed ones (logged as warnings).
func (c *Channel) toInbound(e event) (bus.Inbound, bool) {
	m := e.msg
	nuh, err := ircmsg.ParseNUH(m.Source)
	if err != nil || nuh.Name == "" || len(m.Params) < 2 {
		c.log.Warn("irc: PRIVMSG without a sender, target or text skipped", "source", m.Source, "params", len(m.Params))
		return bus.Inbound{}, false
	}
	target, text := m.Params[0], m.Params[1]
	if !utf8.ValidString(text) {
		c.log.Warn("irc: message that is not UTF-8 skipped (set the client to UTF-8)", "from", nuh.Name, "target", target)
		return bus.Inbound{}, false
	}
	if strings.EqualFold(nuh.Name, e.nick) {
		return bus.Inbound{}, false
	}
	if strings.HasPrefix(text, "\x01") {
		c.ctcp(nuh.Name, text)
		return bus.Inbound{}, false
	}
	isGroup := isChannel(target)
	if !isGroup && !strings.EqualFold(target, e.nick) {
		c.log.Debug("irc: message to another target skipped", "target", target)
		return bus.Inbound{}, false
	}
	text = stripFormatting(text)
	addressed := false
	chatID := nuh.Name
	if isGroup {
		chatID = foldChannel(target)
		text, addressed = addressedTo(text, e.nick, c.cfg.Nick)
	}
	if !c.cfg.GroupPolicy.Admits(isGroup, addressed, chatID, c.groupAllow()) {
		c.log.Debug("irc: channel message not for the bot skipped", "channel", chatID)
		return bus.Inbound{}, false
	}
	content := strings.TrimSpace(text)
	if content == "" {
		return bus.Inbound{}, false
	}
	_, account := m.GetTag("account")
	_, msgid := m.GetTag("msgid")
	meta := bus.Metadata{"nick": nuh.Name, "user": nuh.User, "host": nuh.Host}
	if account != "" {
		meta["account"] = account
	}
	if isGroup {
		meta["channel"] = target
	}
	return bus.Inbound{
		Channel:    c.Name(),
		SenderID:   senderID(nuh, account),
		ChatID:     chatID,
		MessageID:  msgid,
		Content:    content,
		IsGroup:    isGroup,
		Metadata:   meta,
		ReceivedAt: e.at,
	}, true
}

// groupAllow is groupAllowFrom with names folded the way ChatIDs are.
func (c *Channel) groupAllow() []string {
	out := make([]string, len(c.cfg.GroupAllowFrom))
	for i, n := range c.cfg.GroupAllowFrom {
		out[i] = foldChannel(strings.TrimSpace(n))
	}
	return out
}

// ctcp answers VERSION when a flood token is free (so CTCP floods cannot
// make the bot flood) and ignores every other CTCP, ACTION included.
func (c *Channel) ctcp(from, text string) {
	cmd, _, _ := strings.Cut(strings.Trim(text, "\x01"), " ")
	if !strings.EqualFold(cmd, "VERSION") {
		c.log.Debug("irc: CTCP ignored", "from", from, "ctcp", cmd)
		return
	}
	cn := c.current()
	if cn == nil || !c.flood.tryTake() {
		return
	}
	_ = cn.send("NOTICE", from, "\x01VERSION "+ctcpVersion+"\x01")
}

// senderID is "nick|nick!user@host", with "|account:NAME" when the server
// tags messages with the sender's services account. allowFrom may list any
// part; "|" inside a nick (legal on IRC) is written %7C so that a nick like
// "evil|alice" cannot pass for "alice".
func senderID(n ircmsg.NUH, account string) string {
	esc := func(s string) string { return strings.ReplaceAll(s, "|", "%7C") }
	id := esc(n.Name) + "|" + esc(n.Name+"!"+n.User+"@"+n.Host)
	if account != "" && account != "*" {
		id += "|account:" + esc(account)
	}
	return id
}

// isChannel reports whether target names a channel (the common CHANTYPES).
func isChannel(target string) bool {
	return target != "" && strings.ContainsRune("#&+!", rune(target[0]))
}

// foldChannel lower-cases a channel name with RFC 1459 case mapping
// ([]\~ are the upper case of {}|^), so one channel is one chat.
func foldChannel(name string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '[':
			return '{'
		case ']':
			return '}'
		case '\\':
			return '|'
		case '~':
			return '^'
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, name)
}

// addressedTo reports whether text is meant for the bot: it starts with
// one of the nicks followed by ":" or "," (that prefix is removed), or it
// names one of them as a word anywhere.
func addressedTo(text string, nicks ...string) (string, bool) {
	trimmed := strings.TrimLeft(text, " ")
	trimmed = strings.TrimPrefix(trimmed, "@")
	for _, n := range nicks {
		if n == "" || len(trimmed) <= len(n) || !strings.EqualFold(trimmed[:len(n)], n) {
			continue
		}
		if sep := trimmed[len(n)]; sep == ':' || sep == ',' {
			return strings.TrimSpace(trimmed[len(n)+1:]), true
		}
	}
	for _, n := range nicks {
		if n != "" && containsWord(text, n) {
			return text, true
		}
	}
	return text, false
}

// containsWord reports whether word occurs in s (ASCII case-insensitive)
// with no nick character right before or after it.
func containsWord(s, word string) bool {
	ls, lw := strings.ToLower(s), strings.ToLower(word)
	for off := 0; ; {
		i := strings.Index(ls[off:], lw)
		if i < 0 {
			return false
		}
		i += off
		end := i + len(lw)
		if (i == 0 || !isNickByte(ls[i-1])) && (end == len(ls) || !isNickByte(ls[end])) {
			return true
		}
		off = i + 1
	}
}

func isNickByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("[]\\`_^{|}-", b) >= 0
}

// stripFormatting removes mIRC formatting codes: bold, italics,
// underline, strike-through, monospace, reverse, reset and colours with
// their "fg,bg" numbers.
func stripFormatting(s string) string {
	if !strings.ContainsAny(s, "\x02\x03\x04\x0f\x11\x16\x1d\x1e\x1f") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\x02', '\x0f', '\x11', '\x16', '\x1d', '\x1e', '\x1f':
		case '\x03':
			i += colourLen(s[i+1:])
		case '\x04': // hex colour
			i += hexColourLen(s[i+1:])
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// colourLen is the length of the "NN[,NN]" after a colour code.
func colourLen(s string) int {
	n := digits(s, 2)
	if n > 0 && n < len(s) && s[n] == ',' {
		if m := digits(s[n+1:], 2); m > 0 {
			n += 1 + m
		}
	}
	return n
}

func hexColourLen(s string) int {
	n := hexDigits(s, 6)
	if n == 6 && n < len(s) && s[n] == ',' && hexDigits(s[n+1:], 6) == 6 {
		n += 7
	}
	return n
}

func digits(s string, most int) int {
	n := 0
	for n < len(s) && n < most && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

func hexDigits(s string, most int) int {
	n := 0
	for n < len(s) && n < most && strings.IndexByte("0123456789abcdefABCDEF", s[n]) >= 0 {
		n++
	}
	return n
}
