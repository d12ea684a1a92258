package weixin

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// state is what the channel keeps between runs: the login, the long-poll
// cursor and each user's latest context token. It is saved atomically,
// readable by the owner only.
type state struct {
	path string // "" keeps it in memory

	mu sync.Mutex
	d  stateData
}

type stateData struct {
	Token    string            `json:"bot_token,omitempty"`
	BaseURL  string            `json:"base_url,omitempty"`
	BotID    string            `json:"ilink_bot_id,omitempty"`
	Cursor   string            `json:"get_updates_buf,omitempty"`
	Contexts map[string]string `json:"context_tokens,omitempty"`
}

func loadState(dir string) (*state, error) {
	s := &state{d: stateData{Contexts: map[string]string{}}}
	if dir == "" {
		return s, nil
	}
	s.path = filepath.Join(dir, "state.json")
	data, err := os.ReadFile(s.path)
	if os.IsNotExist(err) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stateDir: %w", err)
	}
	if err := json.Unmarshal(data, &s.d); err != nil {
		return nil, fmt.Errorf("stateDir: %s is damaged (%v); delete it and log in again", s.path, err)
	}
	if s.d.Contexts == nil {
		s.d.Contexts = map[string]string{}
	}
	return s, nil
}

func (s *state) token() string   { s.mu.Lock(); defer s.mu.Unlock(); return s.d.Token }
func (s *state) baseURL() string { s.mu.Lock(); defer s.mu.Unlock(); return s.d.BaseURL }
func (s *state) cursor() string  { s.mu.Lock(); defer s.mu.Unlock(); return s.d.Cursor }

func (s *state) contextOf(user string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.d.Contexts[user]
}

// commit records a batch: the new cursor and the context tokens it brought.
func (s *state) commit(cursor string, contexts map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d.Cursor = cursor
	for u, t := range contexts {
		s.d.Contexts[u] = t
	}
	return s.saveLocked()
}

// login records a new login and forgets the old cursor and contexts.
func (s *state) login(token, baseURL, botID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = stateData{Token: token, BaseURL: baseURL, BotID: botID, Contexts: map[string]string{}}
	return s.saveLocked()
}

func (s *state) saveLocked() error {
	if s.path == "" {
		return nil
	}
	data, err := json.Marshal(s.d)
	if err != nil {
		return err
	}
	return atomicfile.Write(s.path, data, 0o600)
}
