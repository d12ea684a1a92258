package bus

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Source says who produced an inbound message.
type Source string

// The sources. The zero value is a person writing on a channel.
const (
	SourceUser      Source = ""
	SourceCron      Source = "cron"
	SourceHeartbeat Source = "heartbeat"
	SourceSubagent  Source = "subagent"
	SourceAPI       Source = "api"
	// SourceSession is a message the agent passed on from another of its
	// conversations (send_session_message); SourceRef is that session.
	SourceSession Source = "session"
)

// String names the source ("user" for the zero value), for logs and
// metrics labels.
func (s Source) String() string {
	if s == SourceUser {
		return "user"
	}
	return string(s)
}

// FromPerson is false for messages nanobot produces itself (cron jobs,
// heartbeats, sub-agent results).
func (m Inbound) FromPerson() bool {
	return m.Source == SourceUser || m.Source == SourceAPI
}

// UnmarshalJSON reads an Inbound, including the shape written before the
// control data became typed fields: journals and NATS streams written by
// older versions carried them as Metadata keys ("cron", "heartbeat",
// "subagent", "maxHistory"), which are moved into the fields here, and a
// sub-agent's result came on channel "system" with the origin
// "channel:chat" as its chat.
func (m *Inbound) UnmarshalJSON(data []byte) error {
	type plain Inbound // without this method
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*m = Inbound(p)
	m.liftLegacy()
	return nil
}

func (m *Inbound) liftLegacy() {
	if m.Channel == "system" {
		if ch, chat, ok := strings.Cut(m.ChatID, ":"); ok {
			m.Channel, m.ChatID = ch, chat
		}
		if m.Source == SourceUser {
			m.Source = SourceSubagent
		}
	}
	if len(m.Metadata) == 0 {
		return
	}
	take := func(key string) (string, bool) {
		v, ok := m.Metadata[key]
		if ok {
			delete(m.Metadata, key)
		}
		return v, ok
	}
	if v, ok := take("cron"); ok && m.Source == SourceUser {
		m.Source, m.SourceRef = SourceCron, v
	}
	if _, ok := take("heartbeat"); ok {
		if m.Source == SourceUser {
			m.Source = SourceHeartbeat
		}
		m.Background = true
	}
	if v, ok := take("subagent"); ok && m.Source == SourceUser {
		m.Source, m.SourceRef = SourceSubagent, v
	}
	if v, ok := take("maxHistory"); ok && m.MaxHistory == 0 {
		if n, err := strconv.ParseFloat(v, 64); err == nil {
			m.MaxHistory = int(n)
		}
	}
	if len(m.Metadata) == 0 {
		m.Metadata = nil
	}
}

// Metadata is platform data a channel passes through the agent and gets
// back on the replies: string keys and values only.
type Metadata map[string]string

// UnmarshalJSON reads Metadata, also as older versions wrote it (any JSON
// values): strings are kept, other values keep their JSON text (3, true),
// null is dropped.
func (md *Metadata) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if raw == nil {
		*md = nil
		return nil
	}
	out := make(Metadata, len(raw))
	for k, v := range raw {
		var s string
		switch {
		case json.Unmarshal(v, &s) == nil:
			out[k] = s
		case string(v) == "null":
		default:
			out[k] = string(v)
		}
	}
	*md = out
	return nil
}

// SilentReply is what the agent answers a background turn (the heartbeat)
// with when there is nothing worth telling the user. Such an answer is not
// delivered; see IsSilent.
const SilentReply = "HEARTBEAT_OK"

// silentTail bounds the words a model may add around SilentReply ("nothing
// due", "all quiet today") for the reply to still count as silent.
const silentTail = 8

// IsSilent reports whether a background turn's reply means "nothing to
// tell". Models rarely answer with the bare token: they add a full stop,
// Markdown emphasis, a dash and a few words, or quote it. The token must
// stand as a word of its own at the start or the end of the reply (ignoring
// white space, punctuation and emphasis around it), and what is left must
// be a short remark, not a report.
func IsSilent(text string) bool {
	edge := func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) || unicode.IsSymbol(r) }
	t := strings.TrimFunc(text, edge)
	if t == "" {
		return true
	}
	word := func(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
	upper := strings.ToUpper(t)
	var rest string
	switch {
	case strings.HasPrefix(upper, SilentReply):
		rest = t[len(SilentReply):]
		if r, _ := utf8.DecodeRuneInString(rest); rest != "" && word(r) {
			return false // HEARTBEAT_OKAY
		}
	case strings.HasSuffix(upper, SilentReply):
		rest = t[:len(t)-len(SilentReply)]
		if r, _ := utf8.DecodeLastRuneInString(rest); rest != "" && word(r) {
			return false // NOT_HEARTBEAT_OK
		}
	default:
		return false
	}
	return len(strings.Fields(rest)) <= silentTail && !strings.Contains(rest, "\n\n")
}
