package mochat

import (
	"encoding/json"
	"log/slog"
	"os"
	"sync"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// cursors are the session cursors, saved after every advance so that a
// restart resumes where the last delivered message was.
type cursors struct {
	path string // "" keeps them in memory only
	log  *slog.Logger

	mu     sync.Mutex
	m      map[string]int64
	panels map[string]string // panel -> the newest message handled
}

func loadCursors(path string, log *slog.Logger) *cursors {
	c := &cursors{path: path, log: log, m: map[string]int64{}, panels: map[string]string{}}
	if path == "" {
		return c
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if !os.IsNotExist(err) {
			log.Warn("mochat: reading saved cursors failed; starting fresh", "file", path, "err", err)
		}
		return c
	}
	var saved struct {
		Sessions map[string]int64  `json:"sessions"`
		Panels   map[string]string `json:"panels"`
	}
	if err := json.Unmarshal(data, &saved); err != nil {
		log.Warn("mochat: saved cursors unreadable; starting fresh", "file", path, "err", err)
		return c
	}
	for k, v := range saved.Sessions {
		c.m[k] = v
	}
	for k, v := range saved.Panels {
		c.panels[k] = v
	}
	return c
}

// get returns a session's cursor and whether one is known.
func (c *cursors) get(session string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[session]
	return v, ok
}

// set records a cursor and saves all of them (atomically, 0600).
func (c *cursors) set(session string, cursor int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[session]; ok && old == cursor {
		return nil
	}
	c.m[session] = cursor
	return c.saveLocked()
}

// lastOf returns the newest message handled in a panel ("" if none).
func (c *cursors) lastOf(panel string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.panels[panel]
}

// setLast records the newest message handled in a panel and saves.
func (c *cursors) setLast(panel, id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.panels[panel] == id {
		return nil
	}
	c.panels[panel] = id
	return c.saveLocked()
}

func (c *cursors) saveLocked() error {
	if c.path == "" {
		return nil
	}
	data, err := json.Marshal(map[string]any{"sessions": c.m, "panels": c.panels})
	if err != nil {
		return err
	}
	return atomicfile.Write(c.path, data, 0o600)
}
