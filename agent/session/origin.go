package session

import "strings"

// MetaOrigin is the metadata key under which a session records the
// channel and chat its turns came from ({"channel": ..., "chat": ...}).
// A key cannot be split back into them: Telegram topics, Slack threads
// and API sessions put more after the first colon, and routed sessions
// name an agent first.
const MetaOrigin = "origin"

// Origin returns the channel and chat s belongs to: as recorded
// (MetaOrigin), or, for sessions written before it was recorded, read from
// the key's "channel:chat" form.
func (s *Session) Origin() (channel, chat string) {
	if o, ok := s.Meta(MetaOrigin).(map[string]any); ok {
		channel, _ = o["channel"].(string)
		chat, _ = o["chat"].(string)
		if channel != "" {
			return channel, chat
		}
	}
	channel, chat, _ = strings.Cut(s.Key, ":")
	return channel, chat
}

// OriginValue is the MetaOrigin value for channel and chat, or nil when s
// records them already.
func (s *Session) OriginValue(channel, chat string) map[string]any {
	if o, ok := s.Meta(MetaOrigin).(map[string]any); ok && o["channel"] == channel && o["chat"] == chat {
		return nil
	}
	return map[string]any{"channel": channel, "chat": chat}
}
