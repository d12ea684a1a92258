package bus

import "strings"

// Senders are written one way everywhere a config or a command names one
// (allowFrom, admins, bindings, identityLinks, limits.exempt, pairing).
//
// A sender id (Inbound.SenderID) is one id, or several ids of one account
// joined by "|" when the platform has more than one: Telegram's numeric id
// and username ("123456789|alice"), Discord's id and name, Signal's number
// and UUID. An entry names a sender when it is the whole id or any one of
// its parts; a leading "@" and letter case do not matter ("@Alice" names
// "123456789|alice"). Where a channel is named with the sender, the entry
// is "channel:sender" ("telegram:123456789", "telegram:alice").

// SenderMatches reports whether entry names sender.
func SenderMatches(entry, sender string) bool {
	entry = strings.TrimPrefix(strings.TrimSpace(entry), "@")
	if entry == "" || sender == "" {
		return false
	}
	if entry == sender {
		return true
	}
	for part := range strings.SplitSeq(sender, "|") {
		if part != "" && strings.EqualFold(entry, strings.TrimPrefix(part, "@")) {
			return true
		}
	}
	return false
}

// ChannelSenderMatches reports whether entry, written "channel:sender",
// names sender on channel.
func ChannelSenderMatches(entry, channel, sender string) bool {
	ch, who, ok := strings.Cut(strings.TrimSpace(entry), ":")
	return ok && ch == channel && SenderMatches(who, sender)
}
