package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// File names inside the workspace.
const (
	memoryDir   = "memory"
	memoryFile  = "MEMORY.md"
	historyFile = "HISTORY.md"
)

// files reads and writes memory/MEMORY.md and memory/HISTORY.md. It does not
// serialize writers; the Consolidator does.
type files struct {
	dir string

	mu     sync.Mutex // guards the cache
	cached string
	stat   fileStamp
}

// fileStamp identifies a version of a file without reading it.
type fileStamp struct {
	mod   time.Time
	size  int64
	valid bool
}

func stampOf(fi fs.FileInfo) fileStamp {
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), valid: true}
}

func newFiles(workspace string) *files {
	return &files{dir: filepath.Join(workspace, memoryDir)}
}

func (f *files) memoryPath() string  { return filepath.Join(f.dir, memoryFile) }
func (f *files) historyPath() string { return filepath.Join(f.dir, historyFile) }

// memory returns MEMORY.md's content ("" when it does not exist), re-reading
// the file only when its size or modification time changed.
func (f *files) memory() (string, error) {
	fi, err := os.Stat(f.memoryPath())
	if errors.Is(err, fs.ErrNotExist) {
		f.mu.Lock()
		f.cached, f.stat = "", fileStamp{}
		f.mu.Unlock()
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("memory: stat %s: %w", f.memoryPath(), err)
	}
	st := stampOf(fi)
	f.mu.Lock()
	if f.stat == st {
		s := f.cached
		f.mu.Unlock()
		return s, nil
	}
	f.mu.Unlock()
	data, err := os.ReadFile(f.memoryPath())
	if err != nil {
		return "", fmt.Errorf("memory: read %s: %w", f.memoryPath(), err)
	}
	f.mu.Lock()
	f.cached, f.stat = string(data), st
	f.mu.Unlock()
	return string(data), nil
}

// readMemory reads MEMORY.md bypassing the cache (for the read-modify-write
// of a consolidation, where a same-second external edit must not be missed).
func (f *files) readMemory() (string, error) {
	data, err := os.ReadFile(f.memoryPath())
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("memory: read %s: %w", f.memoryPath(), err)
	}
	return string(data), nil
}

// writeMemory replaces MEMORY.md atomically: a temporary file in the same
// folder, fsync, rename, fsync of the folder. Readers see the old or the new
// content, never a mix.
func (f *files) writeMemory(content string) error {
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return fmt.Errorf("memory: create %s: %w", f.dir, err)
	}
	if err := atomicfile.Write(f.memoryPath(), []byte(content), 0o644); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	if fi, err := os.Stat(f.memoryPath()); err == nil {
		f.mu.Lock()
		f.cached, f.stat = content, stampOf(fi)
		f.mu.Unlock()
	}
	return nil
}

// appendHistory appends entries to HISTORY.md, each a paragraph followed by
// a blank line, and syncs the file.
func (f *files) appendHistory(entries ...string) error {
	if len(entries) == 0 {
		return nil
	}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return fmt.Errorf("memory: create %s: %w", f.dir, err)
	}
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(strings.TrimRight(e, "\n"))
		b.WriteString("\n\n")
	}
	h, err := os.OpenFile(f.historyPath(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("memory: open %s: %w", f.historyPath(), err)
	}
	if _, err := h.WriteString(b.String()); err != nil {
		h.Close()
		return fmt.Errorf("memory: append %s: %w", f.historyPath(), err)
	}
	if err := h.Sync(); err != nil {
		h.Close()
		return fmt.Errorf("memory: sync %s: %w", f.historyPath(), err)
	}
	if err := h.Close(); err != nil {
		return fmt.Errorf("memory: append %s: %w", f.historyPath(), err)
	}
	return nil
}

// section is one "## " section of MEMORY.md (or the preamble before the
// first one, with an empty heading).
type section struct {
	heading string
	text    string // the whole section, heading line included
}

// splitSections cuts a Markdown document at its level-2 headings. Headings
// inside fenced code blocks do not count. Joining the texts gives back doc.
func splitSections(doc string) []section {
	var (
		out     []section
		cur     strings.Builder
		heading string
		fenced  bool
	)
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, section{heading: heading, text: cur.String()})
			cur.Reset()
		}
	}
	for line := range strings.SplitAfterSeq(doc, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fenced = !fenced
		}
		if !fenced && strings.HasPrefix(line, "## ") {
			flush()
			heading = strings.TrimSpace(strings.TrimPrefix(line, "## "))
		}
		cur.WriteString(line)
	}
	flush()
	return out
}

// trimToCap moves the oldest "## " sections (those nearest the top, after
// any preamble) out of doc until it is within capTokens or one section is
// left. It returns the kept document and the moved text.
func trimToCap(doc string, capTokens int) (kept, moved string) {
	secs := splitSections(doc)
	first := 0
	if len(secs) > 0 && secs[0].heading == "" {
		first = 1 // the preamble (title, intro) stays
	}
	var movedB strings.Builder
	for EstimateText(doc) > capTokens && len(secs)-first > 1 {
		movedB.WriteString(secs[first].text)
		secs = append(secs[:first], secs[first+1:]...)
		var b strings.Builder
		for _, s := range secs {
			b.WriteString(s.text)
		}
		doc = b.String()
	}
	return doc, strings.TrimSpace(movedB.String())
}
