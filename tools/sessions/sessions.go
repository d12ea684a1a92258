// Package sessions holds the tools that look at the agent's other
// conversations: list_sessions, read_session, search_sessions and
// send_session_message (nanobot's names). They act for the owner only: a
// call from a turn whose sender is not an admin is refused, because a
// conversation's history belongs to the people in it. The agent sees its
// own sessions only (each agent has its own store); the current session is
// left out of lists and searches. What they return from other
// conversations is marked as untrusted data.
//
// The tools read through a Source, which the agent provides over its
// session store; they are safe for concurrent use.
package sessions

import (
	"context"
	"errors"
	"time"

	"github.com/nanobot-go/nanobot/tools"
)

// Summary describes one conversation.
type Summary struct {
	Key     string
	Title   string
	Channel string
	Chat    string
	Updated time.Time
	// Messages is the message count (-1: unknown).
	Messages int
}

// Message is one visible message of a conversation: what a person wrote
// or the agent answered (tool calls and results left out).
type Message struct {
	Role string // "user" or "assistant"
	Text string
	Time time.Time
}

// Source is the agent's conversations.
type Source interface {
	// List describes every conversation.
	List(ctx context.Context) ([]Summary, error)
	// Read returns one conversation's summary and visible messages,
	// oldest first; ErrNotFound when there is none.
	Read(ctx context.Context, key string) (Summary, []Message, error)
	// Walk calls fn with the visible messages of the current
	// conversations, newest conversation first (each oldest message
	// first), reading at most maxBytes of them, straight from storage
	// (nothing is loaded into the store's cache); fn's error stops it.
	Walk(ctx context.Context, maxBytes int64, fn func(key string, m Message) error) error
}

// ErrNotFound is Source.Read's error for an unknown session.
var ErrNotFound = errors.New("no such session")

// errNotOwner is the refusal for a turn whose sender is not an admin.
var errNotOwner = errors.New("only the owner (an admin of the channel) may look at or write to other conversations; tell the user so")

// owner checks the call comes from an admin's turn and returns the
// current session key.
func owner(ctx context.Context) (string, error) {
	cc, ok := tools.CallContextFrom(ctx)
	if !ok || !cc.Admin {
		return "", errNotOwner
	}
	return cc.SessionKey, nil
}

// Limits.
const (
	listMax        = 50       // sessions list_sessions shows
	readDefault    = 20       // messages read_session returns without limit
	readMax        = 100      // the largest limit
	messageChars   = 1000     // of one message shown by read_session
	searchSessions = 10       // sessions search_sessions returns
	searchExcerpts = 3        // excerpts per session
	searchBytes    = 32 << 20 // of conversations one search reads, newest first
	excerptChars   = 240      // of one excerpt
	maxSendChars   = 4000     // of a message send_session_message sends
	sendsPerMinute = 6        // per sending session
)

// All returns the four tools over src; send publishes a message into
// another session (nil: send_session_message is left out).
func All(src Source, send Sender) []tools.Tool {
	out := []tools.Tool{&List{src: src}, &Read{src: src}, &Search{src: src}}
	if send != nil {
		out = append(out, newSend(src, send))
	}
	return out
}
