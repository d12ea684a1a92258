package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// Response ids and where their conversations live.
//
// A stored response belongs to a conversation whose root is the first
// response of it; the conversation is the server session "api:resp-<root>".
// The id carries the root: a root response is "resp_<root>", a later one
// "resp_<root><own>" (24 hex digits each), so continuing from any response
// of a conversation needs no per-response record. What is recorded is the
// set of roots (one entry per conversation, as small as the session file it
// names is large), in conversationsFile under the state folder, rewritten
// atomically when a conversation starts. It survives restarts, and it is
// what tells a stored response from an unknown one or one made with
// store:false (whose "resp_<own>" is never recorded as a root). A root
// started by a client key records that key's namespace: only that key
// continues it, any other is told the response does not exist.

// conversationsFile is the record of roots, in the state folder.
const conversationsFile = "api-responses.json"

var responseIDPattern = regexp.MustCompile(`^resp_([0-9a-f]{24})([0-9a-f]{24})?$`)

// rootOf returns the conversation root a response id names.
func rootOf(id string) (string, bool) {
	m := responseIDPattern.FindStringSubmatch(id)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// conversations is the set of conversation roots; it is loaded on first
// use. Safe for concurrent use.
type conversations struct {
	path string

	mu     sync.Mutex
	loaded bool
	roots  map[string]int64  // root -> unix time it started
	spaces map[string]string // root -> its key's namespace, when not the owner's
}

type conversationsDoc struct {
	Version int              `json:"version"`
	Roots   map[string]int64 `json:"roots"`
	// Namespaces are the roots started by client keys (absent: the
	// owner's, as every root written before keys had namespaces).
	Namespaces map[string]string `json:"namespaces,omitempty"`
}

func (s *conversations) loadLocked() error {
	if s.loaded {
		return nil
	}
	s.roots, s.spaces = map[string]int64{}, map[string]string{}
	if s.path == "" {
		s.loaded = true
		return nil
	}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		s.loaded = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("api: read %s: %w", s.path, err)
	}
	var doc conversationsDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("api: %s is not valid JSON: %w", s.path, err)
	}
	for k, v := range doc.Roots {
		s.roots[k] = v
	}
	for k, v := range doc.Namespaces {
		s.spaces[k] = v
	}
	s.loaded = true
	return nil
}

// has reports whether root is a stored conversation of namespace ns.
func (s *conversations) has(root, ns string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(); err != nil {
		return false, err
	}
	_, ok := s.roots[root]
	return ok && s.spaces[root] == ns, nil
}

// add records a new conversation and persists the record before it
// returns, so an id a client has seen is known after a crash.
func (s *conversations) add(root, ns string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(); err != nil {
		return err
	}
	s.roots[root] = now.Unix()
	if ns != "" {
		s.spaces[root] = ns
	}
	if s.path == "" {
		return nil
	}
	b, err := json.Marshal(conversationsDoc{Version: 1, Roots: s.roots, Namespaces: s.spaces})
	if err != nil {
		return fmt.Errorf("api: %w", err)
	}
	if err := atomicfile.Write(s.path, b, 0o600); err != nil {
		delete(s.roots, root)
		delete(s.spaces, root)
		return fmt.Errorf("api: record conversation: %w", err)
	}
	return nil
}
