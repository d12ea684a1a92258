// Package goals keeps sustained goals: tasks the agent keeps working on
// across turns and days (nanobot's create_goal and update_goal). A
// conversation has at most one active goal. The heartbeat advances active
// goals (Due, then a check-in turn in the goal's conversation, whose answer
// reaches the chat that set it), and `nanobot status` and the workbench
// list them.
//
// Goals live in one JSON file in the state folder, changed only through
// Store.Update, which serialises writers across goroutines and processes
// (cluster workers share the state folder) and replaces the file
// atomically. A Store is safe for concurrent use.
package goals

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
	"github.com/nanobot-go/nanobot/tools"
)

// Status of a goal.
type Status string

// Statuses. Only active goals are advanced.
const (
	Active    Status = "active"
	Complete  Status = "complete"
	Cancelled Status = "cancelled"
	Blocked   Status = "blocked"
)

// Note is one progress report.
type Note struct {
	Time time.Time `json:"time"`
	Text string    `json:"text"`
}

// Goal is one sustained task.
type Goal struct {
	ID string `json:"id"`
	// Agent is the agent whose conversation it is ("" the default).
	Agent      string `json:"agent,omitempty"`
	SessionKey string `json:"sessionKey"`
	Channel    string `json:"channel"`
	ChatID     string `json:"chatId"`
	Objective  string `json:"objective"`
	// Summary is a one-line label for lists.
	Summary string `json:"summary,omitempty"`
	Status  Status `json:"status"`
	// By is who set it (channel:sender).
	By      string    `json:"by,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// Advanced is when the heartbeat last started a check-in.
	Advanced time.Time `json:"advanced,omitzero"`
	// Notes are the latest progress reports, oldest first.
	Notes []Note `json:"notes,omitempty"`
}

// Label is the goal's summary, or its objective cut to a line.
func (g Goal) Label() string {
	if g.Summary != "" {
		return g.Summary
	}
	return tools.OneLine(g.Objective, 80)
}

// formatVersion is the version of the file this build writes; a newer one
// is refused rather than rewritten without what it added.
const formatVersion = 1

// maxNotes are the progress reports kept per goal; maxDone the finished
// goals kept for the record.
const (
	maxNotes = 20
	maxDone  = 100
)

type file struct {
	Version int    `json:"version"`
	Goals   []Goal `json:"goals"`
}

// Store is the goals file.
type Store struct{ path string }

// NewStore returns the store at path (state/goals.json).
func NewStore(path string) *Store { return &Store{path: path} }

// List returns every goal, active ones first, then newest first.
func (s *Store) List() ([]Goal, error) {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f, err := decode(s.path, data)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(f.Goals, func(a, b Goal) int {
		if (a.Status == Active) != (b.Status == Active) {
			if a.Status == Active {
				return -1
			}
			return 1
		}
		return b.Updated.Compare(a.Updated)
	})
	return f.Goals, nil
}

// Update changes the goals under the file's lock; fn's error leaves the
// file as it was. Finished goals beyond the newest maxDone are dropped.
func (s *Store) Update(fn func(goals []Goal) ([]Goal, error)) error {
	return atomicfile.Update(s.path, 0o600, func(old []byte) ([]byte, error) {
		f := file{Version: formatVersion}
		if len(old) > 0 {
			var err error
			if f, err = decode(s.path, old); err != nil {
				return nil, err
			}
		}
		goals, err := fn(f.Goals)
		if err != nil {
			return nil, err
		}
		f.Goals, f.Version = prune(goals), formatVersion
		return json.MarshalIndent(f, "", "  ")
	})
}

func decode(path string, data []byte) (file, error) {
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return file{}, fmt.Errorf("%s: %w", path, err)
	}
	if f.Version > formatVersion {
		return file{}, fmt.Errorf("%s was written by a newer nanobot (format %d; this one reads up to %d): upgrade nanobot", path, f.Version, formatVersion)
	}
	return f, nil
}

// prune keeps every active goal and the newest maxDone finished ones, and
// each goal's last maxNotes notes.
func prune(goals []Goal) []Goal {
	done := 0
	out := make([]Goal, 0, len(goals))
	for i := len(goals) - 1; i >= 0; i-- { // newest are appended last
		g := goals[i]
		if g.Status != Active {
			if done == maxDone {
				continue
			}
			done++
		}
		if len(g.Notes) > maxNotes {
			g.Notes = g.Notes[len(g.Notes)-maxNotes:]
		}
		out = append(out, g)
	}
	slices.Reverse(out)
	return out
}
