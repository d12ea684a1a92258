package session

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/providers"
)

// Session is the stored history of one conversation. Obtain it from
// Store.Load; only Store methods change it.
//
// A store hands the same *Session to every caller of a key, so a turn may be
// writing it while another goroutine (a queued message of the chat, the
// workbench, a sessions tool) reads it, and the workbench may set metadata
// during a turn. Outside a store, read the fields through the methods
// (History, Tail, Len, Meta, Created, Updated, Consolidated, Title,
// Origin), which take the session's lock. Key never changes; Messages
// changes (Append, Rewrite, Reset) only in what the agent loop runs as the
// session's worker, one at a time — its turns, idle compaction and a reset
// from outside — so code running there may read it directly.
type Session struct {
	// Key identifies the conversation: "channel:chat_id" unless the channel
	// chose another scheme (e.g. "slack:C1:thread:123").
	Key string
	// CreatedAt is when the session (or its current life since /new) began.
	CreatedAt time.Time
	// UpdatedAt is the time of the last write.
	UpdatedAt time.Time
	// LastConsolidated is a cursor into Messages: Messages[:LastConsolidated]
	// have been consolidated into memory and are no longer sent to the LLM.
	LastConsolidated int
	// Metadata is free-form per-session data, persisted as a JSON object.
	Metadata map[string]any
	// Messages is the whole history, oldest first, consolidated ones
	// included.
	Messages []providers.Message

	// mu guards the exported fields against a History call running while a
	// store changes them; stores serialize their own writes per key.
	mu sync.RWMutex
	// owner is the store that loaded the session; set once, never changed,
	// so it can be checked before taking the key's lock.
	owner any
	// file is FileStore's view of the backing file, guarded by the key's
	// lock.
	file fileState
}

// History returns the messages to send to the LLM, as copies the caller may
// change freely. It is safe to call while a store writes to the session.
//
// It takes the messages after LastConsolidated, keeps the last maxMessages of
// them (0 means no limit), and makes the sequence one every provider
// accepts:
//
//   - it starts at the first user message (a window that cut a turn in half
//     would otherwise start with an assistant message or a tool result); no
//     user message means an empty history;
//   - a tool result is kept only in the run of tool messages right after the
//     assistant message that made the call, once per call; other tool
//     results are orphans and are dropped;
//   - a tool call with no result in that run (a crash mid-turn, a window
//     cut) is removed from its assistant message, and the message is dropped
//     when nothing else is left in it (no text, no other call). Keeping the
//     text rather than dropping the whole message loses the least context;
//     inventing "no result" tool messages would put words in the tool's
//     mouth.
//
// The result for a given session only grows at the end as turns are
// appended, so the prompt prefix stays cacheable.
func (s *Session) History(maxMessages int) []providers.Message {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return legalHistory(s.Messages, s.LastConsolidated, maxMessages)
}

// Tail returns a copy of the last n stored messages (all when fewer),
// consolidated ones included. Like History it is safe while a store writes
// to the session.
func (s *Session) Tail(n int) []providers.Message {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]providers.Message(nil), s.Messages[max(len(s.Messages)-n, 0):]...)
}

// Len returns the number of stored messages, consolidated ones included.
// Like History it is safe while a store writes to the session.
func (s *Session) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.Messages)
}

// Meta returns the metadata value stored under key (nil when absent). Like
// History it is safe while a store writes to the session.
func (s *Session) Meta(key string) any {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.Metadata[key]
}

// Created returns when the session (or its current life since /new)
// began. Like History it is safe while a store writes to the session.
func (s *Session) Created() time.Time {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.CreatedAt
}

// Updated returns the time of the session's last write. Like History it is
// safe while a store writes to the session.
func (s *Session) Updated() time.Time {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.UpdatedAt
}

// Consolidated returns LastConsolidated, the number of messages already
// folded into memory. Like History it is safe while a store writes to the
// session.
func (s *Session) Consolidated() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.LastConsolidated
}

func legalHistory(msgs []providers.Message, cursor, maxMessages int) []providers.Message {
	window := msgs[min(max(cursor, 0), len(msgs)):]
	if maxMessages > 0 && len(window) > maxMessages {
		window = window[len(window)-maxMessages:]
	}
	start := -1
	for i := range window {
		if window[i].Role == providers.RoleUser {
			start = i
			break
		}
	}
	if start < 0 {
		return nil
	}
	window = window[start:]

	out := make([]providers.Message, 0, len(window))
	// The open tool-call block: the assistant message at out[caller] and
	// which of its calls got a result so far.
	caller, answered := -1, []bool(nil)
	closeBlock := func() {
		if caller < 0 {
			return
		}
		m := &out[caller]
		kept := m.ToolCalls[:0]
		for i, tc := range m.ToolCalls {
			if answered[i] {
				kept = append(kept, tc)
			}
		}
		if len(kept) == 0 {
			kept = nil
		}
		m.ToolCalls = kept
		if len(kept) == 0 && !hasContent(*m) {
			// No result was kept for it, so it is the last message of out.
			out = out[:caller]
		}
		caller, answered = -1, nil
	}
	for _, m := range window {
		if m.Role == providers.RoleTool {
			if caller >= 0 {
				for i, tc := range out[caller].ToolCalls {
					if !answered[i] && tc.ID == m.ToolCallID {
						answered[i] = true
						out = append(out, cloneMessage(m))
						break
					}
				}
			}
			continue // kept above, or an orphan
		}
		closeBlock()
		out = append(out, cloneMessage(m))
		if m.Role == providers.RoleAssistant && len(m.ToolCalls) > 0 {
			caller, answered = len(out)-1, make([]bool, len(m.ToolCalls))
		}
	}
	closeBlock()
	return out
}

// hasContent reports whether m says anything besides tool calls.
func hasContent(m providers.Message) bool {
	if strings.TrimSpace(m.Content) != "" {
		return true
	}
	for _, p := range m.Parts {
		if p.ImageURL != nil || strings.TrimSpace(p.Text) != "" {
			return true
		}
	}
	return false
}

// cloneMessage returns a deep copy of m; empty slices become nil.
func cloneMessage(m providers.Message) providers.Message {
	c := m
	c.Parts, c.ToolCalls, c.ThinkingBlocks, c.ReasoningItems = nil, nil, nil, nil
	if len(m.Parts) > 0 {
		c.Parts = make([]providers.ContentPart, len(m.Parts))
		for i, p := range m.Parts {
			if p.ImageURL != nil {
				img := *p.ImageURL
				p.ImageURL = &img
			}
			c.Parts[i] = p
		}
	}
	if len(m.ToolCalls) > 0 {
		c.ToolCalls = append([]providers.ToolCall(nil), m.ToolCalls...)
	}
	if len(m.ThinkingBlocks) > 0 {
		c.ThinkingBlocks = append([]providers.ThinkingBlock(nil), m.ThinkingBlocks...)
	}
	for _, ri := range m.ReasoningItems {
		ri.Summary = append([]string(nil), ri.Summary...)
		c.ReasoningItems = append(c.ReasoningItems, ri)
	}
	return c
}

// withMetadata returns a copy of s's metadata with key set to value (nil
// deletes it). The value is stored as its JSON decoding (numbers become
// float64, structs maps), so it reads back the same after a reload.
func withMetadata(s *Session, key string, value any) (map[string]any, error) {
	md := maps.Clone(s.Metadata)
	if md == nil {
		md = map[string]any{}
	}
	if value == nil {
		delete(md, key)
		return md, nil
	}
	b, err := json.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("session: set metadata %q of %q: %w", key, s.Key, err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("session: set metadata %q of %q: %w", key, s.Key, err)
	}
	md[key] = v
	return md, nil
}
