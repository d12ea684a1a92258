// Package stateformat versions an instance's data folder as a whole: the
// journal, the outbox, the sessions, the usage ledger and the small stores
// (pairing, goals, cron, tokens). One number in state/format.json says
// which format the files are in. A newer binary upgrades an older folder
// on start (each step in Steps, in order) and records the new number; an
// older binary refuses a newer folder with a clear message instead of
// misreading it or dropping what it does not know.
//
// Stores still read the older shapes of their own records (bus.Inbound
// lifts the control data older versions kept in metadata, for example), so
// a step is needed only when files must be rewritten or moved.
//
// Open is called once, before anything else touches the folder; it is not
// safe against a second process upgrading at the same time (the gateway's
// pidfile keeps a second one out first).
package stateformat

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// Current is the format this build writes.
//
//	1: everything before the format was recorded (no state/format.json).
//	2: state/format.json; goals (state/goals.json) and the approval log
//	   (state/approvals.jsonl) appear. No file of format 1 changes.
const Current = 2

// FileName is the record in the state folder.
const FileName = "format.json"

// Record is what format.json holds.
type Record struct {
	Version int `json:"version"`
	// Written and By say when and by which build it was last raised.
	Written time.Time `json:"written"`
	By      string    `json:"by,omitempty"`
}

// Step upgrades a folder from format From to From+1.
type Step struct {
	From int
	What string
	Run  func(dataDir string) error
}

// Steps are the upgrades, oldest first.
var Steps = []Step{
	{From: 1, What: "record the format (nothing to convert)", Run: func(string) error { return nil }},
}

// TooNewError is Open's refusal of a folder written by a newer build.
type TooNewError struct {
	Path  string
	Found int
	By    string
}

func (e *TooNewError) Error() string {
	by := ""
	if e.By != "" {
		by = " (" + e.By + ")"
	}
	return fmt.Sprintf("the data in %s is in format %d, written by a newer nanobot%s; this one understands up to format %d. "+
		"Upgrade nanobot, or restore a backup made before the upgrade: nothing was changed", filepath.Dir(filepath.Dir(e.Path)), e.Found, by, Current)
}

// Upgraded lists what Open did (empty when the folder was current).
type Upgraded struct {
	From, To int
	Steps    []string
}

// Open checks the data folder whose state folder is stateDir and upgrades
// it to Current; build names this binary in the record. A folder with no
// record is format 1 when it holds anything already (an installation older
// than the record), and new otherwise.
func Open(dataDir, stateDir, build string) (Upgraded, error) {
	path := filepath.Join(stateDir, FileName)
	found, err := read(path, dataDir, build)
	if err != nil {
		return Upgraded{}, err
	}
	if found.Version > Current {
		return Upgraded{}, &TooNewError{Path: path, Found: found.Version, By: found.By}
	}
	up := Upgraded{From: found.Version, To: Current}
	if found.Version == Current {
		return up, nil
	}
	for _, s := range Steps {
		if s.From < found.Version {
			continue
		}
		if err := s.Run(dataDir); err != nil {
			return up, fmt.Errorf("upgrading the data in %s from format %d: %s: %w", dataDir, s.From, s.What, err)
		}
		up.Steps = append(up.Steps, s.What)
		// Each step is recorded as it completes, so a crash resumes after it.
		if err := write(path, Record{Version: s.From + 1, Written: time.Now().UTC(), By: build}); err != nil {
			return up, err
		}
	}
	return up, nil
}

// read returns the record, format 1 for an existing folder without one, or
// Current for a new one (whose record it writes, naming build).
func read(path, dataDir, build string) (Record, error) {
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if populated(dataDir) {
			return Record{Version: 1}, nil
		}
		return Record{Version: Current}, write(path, Record{Version: Current, Written: time.Now().UTC(), By: build})
	case err != nil:
		return Record{}, fmt.Errorf("read %s: %w", path, err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil || r.Version < 1 {
		return Record{}, fmt.Errorf("%s is damaged (%v); put a backup back, or write {\"version\": %d} if the folder is from this build", path, err, Current)
	}
	return r, nil
}

func write(path string, r Record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o600)
}

// populated reports whether an older build left anything in the folder:
// sessions, a journal, pairings, cron jobs.
func populated(dataDir string) bool {
	for _, sub := range []string{"sessions", "state", "cron", "usage"} {
		entries, err := os.ReadDir(filepath.Join(dataDir, sub))
		if err == nil && len(entries) > 0 {
			return true
		}
	}
	return false
}
