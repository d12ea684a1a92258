package web

import (
	"strings"

	"github.com/nanobot-go/nanobot/bus"
)

// A temporary chat is a browser conversation that is never stored: its
// messages go to the agent as Ephemeral turns carrying the conversation so
// far (bus.Inbound.History), which the agent neither loads nor saves, so
// no session, no memory consolidation. The conversation lives here, in
// memory, while one of its tabs is open; closing the last tab forgets it.

const (
	// maxTempTurns bounds a temporary chat's remembered conversation (its
	// oldest turns are dropped first).
	maxTempTurns = 60
	// maxTempChars bounds its size in characters.
	maxTempChars = 400_000
)

// tempChat is one temporary chat's conversation; guarded by Channel.mu.
type tempChat struct {
	turns []bus.Turn
	// answers maps the id of a reply frame to its turn, so a streamed
	// reply's final edits replace one turn instead of adding several.
	answers map[string]int
}

// history returns a copy of the conversation so far.
func (tc *tempChat) history() []bus.Turn {
	return append([]bus.Turn(nil), tc.turns...)
}

func (tc *tempChat) add(t bus.Turn) int {
	tc.turns = append(tc.turns, t)
	size := 0
	for _, x := range tc.turns {
		size += len(x.Content)
	}
	drop := 0
	for len(tc.turns)-drop > maxTempTurns || (size > maxTempChars && len(tc.turns)-drop > 1) {
		size -= len(tc.turns[drop].Content)
		drop++
	}
	if drop > 0 {
		tc.turns = append([]bus.Turn(nil), tc.turns[drop:]...)
		for id, i := range tc.answers {
			if i < drop {
				delete(tc.answers, id)
			} else {
				tc.answers[id] = i - drop
			}
		}
	}
	return len(tc.turns) - 1
}

// answered records the agent's final reply (frame id) in chat, when chat
// is temporary.
func (c *Channel) answered(chat, id, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tc := c.temps[chat]
	if tc == nil || strings.TrimSpace(text) == "" {
		return
	}
	if i, ok := tc.answers[id]; ok {
		tc.turns[i].Content = text
		return
	}
	tc.answers[id] = tc.add(bus.Turn{Role: "assistant", Content: text})
}

// tempCommand reports whether a command may run in a temporary chat: only
// those that touch no session.
func tempCommand(text string) (allowed, isCommand bool) {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "/") || len(t) < 2 {
		return true, false
	}
	head, _, _ := strings.Cut(t[1:], " ")
	head, _, _ = strings.Cut(head, "@") // as the agent reads "/new@bot"
	switch strings.ToLower(head) {
	case "stop", "help":
		return true, true
	}
	// Something like "/etc/hosts?" is text, not a command.
	for _, r := range head {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') {
			return true, false
		}
	}
	return false, true
}
