package agent

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools/sessions"
)

// sessionSource lets the session tools read the agent's store.
type sessionSource struct{ store session.Store }

func (s sessionSource) List(ctx context.Context) ([]sessions.Summary, error) {
	infos, err := s.store.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]sessions.Summary, 0, len(infos))
	for _, in := range infos {
		ch, _, _ := strings.Cut(in.Key, ":") // shown only; Read gives the recorded origin
		out = append(out, sessions.Summary{Key: in.Key, Channel: ch, Updated: in.UpdatedAt, Messages: in.Messages})
	}
	return out, nil
}

func (s sessionSource) Read(ctx context.Context, key string) (sessions.Summary, []sessions.Message, error) {
	if strings.TrimSpace(key) == "" {
		return sessions.Summary{}, nil, sessions.ErrNotFound
	}
	sess, err := s.store.Load(ctx, key)
	if err != nil {
		return sessions.Summary{}, nil, err
	}
	if sess.Len() == 0 {
		// Load returns an empty stand-in for a key never written: only a
		// stored conversation (an emptied one after /new included) is
		// one the tools may read or write into.
		stored, err := s.stored(ctx, key)
		if err != nil {
			return sessions.Summary{}, nil, err
		}
		if !stored {
			return sessions.Summary{}, nil, sessions.ErrNotFound
		}
	}
	ch, chat := sess.Origin()
	var msgs []sessions.Message
	for _, m := range sess.Tail(math.MaxInt32) { // consolidated messages too: the whole conversation
		if v, ok := visible(m); ok {
			msgs = append(msgs, v)
		}
	}
	return sessions.Summary{Key: sess.Key, Title: sess.Title(), Channel: ch, Chat: chat, Updated: sess.Updated(), Messages: len(msgs)}, msgs, nil
}

// stored reports whether the store holds a conversation under key.
func (s sessionSource) stored(ctx context.Context, key string) (bool, error) {
	list, err := s.store.List(ctx)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(list, func(i session.Info) bool { return i.Key == key }), nil
}

// Walk reads the store's files as memory_search does (FileStore.Each),
// skipping conversations set aside by /new and what is not plain text.
func (s sessionSource) Walk(ctx context.Context, maxBytes int64, fn func(string, sessions.Message) error) error {
	w, ok := s.store.(sessionWalker)
	if !ok {
		return errors.New("this session store cannot be searched")
	}
	return w.Each(ctx, maxBytes, func(e session.Entry) error {
		m, ok := visible(e.Message)
		if e.Archived || !ok {
			return nil
		}
		return fn(e.Key, m)
	})
}

// visible is m as the session tools show it: a person's or the agent's
// text, not tool calls and results.
func visible(m providers.Message) (sessions.Message, bool) {
	if m.Role != providers.RoleUser && m.Role != providers.RoleAssistant {
		return sessions.Message{}, false
	}
	t := m.Text()
	if t == "" {
		return sessions.Message{}, false
	}
	at, _ := time.Parse(time.RFC3339Nano, m.Timestamp)
	return sessions.Message{Role: m.Role, Text: t, Time: at}, true
}
