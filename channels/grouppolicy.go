package channels

import (
	"fmt"
	"slices"
)

// GroupPolicy decides which group messages an adapter passes on: the
// groupPolicy key of every platform that has group chats. Direct chats are
// never affected. Who may talk at all is still allowFrom's business (the
// Gate); the policy only says which group messages are meant for the bot.
type GroupPolicy string

// Group policies, as users write them in config.json.
const (
	// GroupMention passes a group message on only when it addresses the
	// bot (an @mention, a reply to the bot, whatever the platform has).
	GroupMention GroupPolicy = "mention"
	// GroupOpen passes every group message on.
	GroupOpen GroupPolicy = "open"
	// GroupAllowlist passes every message of the listed groups on, and
	// nothing from other groups.
	GroupAllowlist GroupPolicy = "allowlist"
)

// Check validates the policy. allowKey names the config key that lists
// the groups of the allowlist policy (usually "groupAllowFrom") and allowed
// is its value: the allowlist policy with an empty list would silence every
// group, so it is an error. The errors name the key ("groupPolicy: ...");
// the registry prefixes the platform (channels.discord.groupPolicy).
func (p GroupPolicy) Check(allowKey string, allowed []string) error {
	switch p {
	case GroupMention, GroupOpen:
		return nil
	case GroupAllowlist:
		if len(allowed) == 0 {
			return fmt.Errorf("%s: required with groupPolicy %q", allowKey, GroupAllowlist)
		}
		return nil
	}
	return fmt.Errorf("groupPolicy: %q is not %q, %q or %q", string(p), GroupMention, GroupOpen, GroupAllowlist)
}

// Admits reports whether a message passes the policy. isGroup says it came
// from a group chat, addressed that it addresses the bot, chatID is the
// group's id as allowed lists it. An empty policy counts as GroupMention,
// the default of every platform.
func (p GroupPolicy) Admits(isGroup, addressed bool, chatID string, allowed []string) bool {
	if !isGroup {
		return true
	}
	switch p {
	case GroupOpen:
		return true
	case GroupAllowlist:
		return slices.Contains(allowed, chatID)
	default:
		return addressed
	}
}
