package agent

import (
	"fmt"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/gateway/bus"
	"github.com/nanobot-go/nanobot/providers"
)

// sanitizeTurn prepares a turn for storage (the seed's "save and clean"):
// the user message loses its runtime context and inline images (a note with
// the file path stays), tool results over the size cap keep head and tail,
// empty assistant messages are skipped, image messages from tools become a
// note, and every message gets a timestamp.
func (l *Loop) sanitizeTurn(m bus.Inbound, user providers.Message, produced []providers.Message) []providers.Message {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	out := make([]providers.Message, 0, len(produced)+1)

	u := providers.Message{Role: providers.RoleUser, Content: StripRuntimeContext(user.Text()), Timestamp: now, InboundID: inboundID(m)}
	for _, md := range m.Media {
		if md.IsImage() {
			u.Content += "\n" + attachmentNote(md)
		}
	}
	out = append(out, u)

	for _, msg := range produced {
		msg.Timestamp = now
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
// it. A turn stored without an answer (interrupted) is run again.
func answered(history []providers.Message, id string) (string, bool) {
	if id == "" {
		return "", false
	}
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role != providers.RoleUser || history[i].InboundID != id {
			continue
		}
		reply := ""
		for _, m := range history[i+1:] {
			if m.Role == providers.RoleUser {
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
		if history[i].Role == providers.RoleUser && history[i].InboundID == id {
			return i
		}
	}
	return -1
}
