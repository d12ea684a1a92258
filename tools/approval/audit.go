package approval

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Entry is one line of the audit log.
type Entry struct {
	Time       time.Time `json:"time"`
	ID         string    `json:"id,omitempty"`
	Tool       string    `json:"tool"`
	Action     string    `json:"action"`
	Reasons    []string  `json:"reasons,omitempty"`
	SessionKey string    `json:"sessionKey,omitempty"`
	Sender     string    `json:"sender,omitempty"`
	// Outcome is "asked", "allowed once", "allowed always", "denied",
	// "timed out", "cancelled" or "approved by pattern".
	Outcome string `json:"outcome"`
	// By is who answered (channel:sender, or "workbench").
	By string `json:"by,omitempty"`
}

// maxAuditBytes is when the log is rotated: the current file becomes
// "<path>.1" (replacing an older one), so the log keeps between one and two
// files' worth.
const maxAuditBytes = 4 << 20

// Audit is an append-only JSON-lines file (mode 0600). Safe for concurrent
// use within one process.
type Audit struct {
	path string
	mu   sync.Mutex
}

// NewAudit returns the log at path (created on the first Append).
func NewAudit(path string) *Audit { return &Audit{path: path} }

// Append writes e as one line.
func (a *Audit) Append(e Entry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if fi, err := os.Stat(a.path); err == nil && fi.Size()+int64(len(line)) > maxAuditBytes {
		if err := os.Rename(a.path, a.path+".1"); err != nil {
			return fmt.Errorf("rotate approval log: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(a.path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	// One write of a whole line: a crash leaves at most a torn last line,
	// which Recent skips.
	_, werr := f.Write(line)
	return errors.Join(werr, f.Close())
}

// Recent returns up to n entries, newest first, from the current file.
// Lines that do not parse (a torn last line after a crash) are skipped.
func (a *Audit) Recent(n int) ([]Entry, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, err := os.Open(a.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var all []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var e Entry
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			all = append(all, e)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([]Entry, 0, min(n, len(all)))
	for i := len(all) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, all[i])
	}
	return out, nil
}

// Recent returns up to n audit entries, newest first (none without an
// audit log).
func (b *Broker) Recent(n int) ([]Entry, error) {
	if b.opts.Audit == nil {
		return nil, nil
	}
	return b.opts.Audit.Recent(n)
}
