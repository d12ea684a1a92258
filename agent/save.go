package agent

import (
	"fmt"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/providers"
)

// sanitizeTurn prepares a turn for storage (the seed's "save and clean"):
// the user message loses its runtime context and inline images (a note with
// the file path stays), tool results over the size cap keep head and tail,
// empty assistant messages are skipped, image messages from tools become a
// note, and every message gets a timestamp.
//
// Every message of a turn carries the same timestamp: that is how the user
// messages steered into a turn are told apart from the next turn's. The
// turn's user message carries the ids of every message it answers (ts), a
// steered one its own.
func (l *Loop) sanitizeTurn(m bus.Inbound, user providers.Message, produced []providers.Message, ts *turnState, injected []int) []providers.Message {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	out := make([]providers.Message, 0, len(produced)+1)
	out = append(out, storedUser(m, user, ts.storedIDs(), now))

	next := 0 // the next steered message in injected
	for i, msg := range produced {
		msg.Timestamp = now
		if next < len(injected) && injected[next] == i && next < len(ts.taken) {
			out = append(out, storedUser(ts.taken[next], msg, inboundID(ts.taken[next]), now))
			next++
			continue
		}
		switch msg.Role {
		case providers.RoleAssistant:
			if strings.TrimSpace(msg.Content) == "" && len(msg.ToolCalls) == 0 {
				continue
			}
		case providers.RoleTool:
			msg.Content = truncateMiddle(msg.Content, l.cfg.MaxToolResultChars)
		case providers.RoleUser:
			if msg.HasImages() {
				n := 0
				for _, p := range msg.Parts {
					if p.Type == "image_url" {
						n++
					}
				}
				msg = providers.Message{Role: providers.RoleUser, Content: fmt.Sprintf("[%d image(s) returned by tools; not stored]", n), Timestamp: now}
			}
		}
		out = append(out, msg)
	}
	return out
}

// storedUser is the stored form of the user message sent for m: without
// runtime context and inline images (a note with the file path stays).
func storedUser(m bus.Inbound, sent providers.Message, ids, now string) providers.Message {
	u := providers.Message{Role: providers.RoleUser, Content: StripRuntimeContext(sent.Text()), Timestamp: now, InboundID: ids}
	for _, md := range m.Media {
		if md.IsImage() {
			u.Content += "\n" + attachmentNote(md)
		}
	}
	return u
}

// truncateMiddle keeps the head and tail of s within max characters and says
// how much was cut.
func truncateMiddle(s string, max int) string {
	r := []rune(s)
	if max <= 0 || len(r) <= max {
		return s
	}
	head := max * 2 / 3
	tail := max - head
	cut := len(r) - head - tail
	return string(r[:head]) + fmt.Sprintf("\n\n... [%d characters cut] ...\n\n", cut) + string(r[len(r)-tail:])
}

// inboundID names the platform message m came from ("" for messages
// without an id: those cannot be recognised when delivered again).
func inboundID(m bus.Inbound) string {
	if m.MessageID == "" {
		return ""
	}
	return m.Channel + "/" + m.ChatID + "/" + m.MessageID
}

// answered returns the final answer stored for the user message with id,
// when the session already holds that turn with an answer: the message was
// delivered again after a crash between saving the turn and acknowledging
// it. A turn stored without an answer (interrupted) is run again. User
// messages stored with the same timestamp belong to the same turn (steered
// messages, images returned by tools) and do not end it.
func answered(history []providers.Message, id string) (string, bool) {
	if id == "" {
		return "", false
	}
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role != providers.RoleUser || !idIn(history[i].InboundID, id) {
			continue
		}
		reply := ""
		stamp := history[i].Timestamp
		for _, m := range history[i+1:] {
			if m.Role == providers.RoleUser && (stamp == "" || m.Timestamp != stamp) {
				break
			}
			if m.Role == providers.RoleAssistant && strings.TrimSpace(m.Content) != "" {
				reply = m.Content
			}
		}
		return reply, reply != ""
	}
	return "", false
}

// storedAt is the index in history of the user message with id, or -1
// (also for messages without an id).
func storedAt(history []providers.Message, id string) int {
	if id == "" {
		return -1
	}
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role == providers.RoleUser && idIn(history[i].InboundID, id) {
			return i
		}
	}
	return -1
}
