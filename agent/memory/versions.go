package memory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// Every rewrite of MEMORY.md keeps the content it replaces in
// memory/versions/, so a consolidation that lost something can be undone
// (/dream-log lists them, /dream-restore puts one back). The newest
// keepVersions are kept.

const (
	versionsDir  = "versions"
	keepVersions = 30
	// versionTime names a version file: MEMORY-<UTC time>.md.
	versionTime = "20060102T150405.000Z"
)

// Version is a kept MEMORY.md.
type Version struct {
	// ID names it for /dream-restore: its time, as in the file name.
	ID    string
	Saved time.Time
	Bytes int64
}

// keepVersion saves the MEMORY.md about to be replaced (nothing when there
// is none or it is empty) and drops the oldest beyond keepVersions.
func (f *files) keepVersion(now time.Time) error {
	old, err := f.readMemory()
	if err != nil || strings.TrimSpace(old) == "" {
		return err
	}
	dir := filepath.Join(f.dir, versionsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("memory: keep version: %w", err)
	}
	name := "MEMORY-" + now.UTC().Format(versionTime) + ".md"
	if err := atomicfile.Write(filepath.Join(dir, name), []byte(old), 0o644); err != nil {
		return fmt.Errorf("memory: keep version: %w", err)
	}
	vs, err := f.versions()
	if err != nil {
		return err
	}
	for _, v := range vs[min(len(vs), keepVersions):] {
		_ = os.Remove(f.versionPath(v.ID))
	}
	return nil
}

func (f *files) versionPath(id string) string {
	return filepath.Join(f.dir, versionsDir, "MEMORY-"+id+".md")
}

// versions lists the kept versions, newest first.
func (f *files) versions() ([]Version, error) {
	entries, err := os.ReadDir(filepath.Join(f.dir, versionsDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("memory: versions: %w", err)
	}
	var out []Version
	for _, e := range entries {
		id, ok := strings.CutPrefix(e.Name(), "MEMORY-")
		if !ok {
			continue
		}
		id, ok = strings.CutSuffix(id, ".md")
		at, err := time.Parse(versionTime, id)
		if !ok || err != nil {
			continue
		}
		v := Version{ID: id, Saved: at}
		if fi, err := e.Info(); err == nil {
			v.Bytes = fi.Size()
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Saved.After(out[j].Saved) })
	return out, nil
}

// Versions lists the kept MEMORY.md versions, newest first.
func (c *Consolidator) Versions() ([]Version, error) { return c.files.versions() }

// ErrNoVersion is Restore's error for an id no kept version has.
var ErrNoVersion = errors.New("no such memory version (see /dream-log)")

// Restore puts a kept version back as MEMORY.md; the content it replaces
// is kept as a version too, so a restore can be undone the same way. It
// waits for a consolidation in progress.
func (c *Consolidator) Restore(id string) error {
	id = strings.TrimSpace(id)
	if _, err := time.Parse(versionTime, id); err != nil {
		return ErrNoVersion // not a version's name (and no path)
	}
	data, err := os.ReadFile(c.files.versionPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return ErrNoVersion
	}
	if err != nil {
		return fmt.Errorf("memory: restore: %w", err)
	}
	c.lock <- struct{}{}
	defer func() { <-c.lock }()
	if err := c.files.keepVersion(c.opts.Now()); err != nil {
		return err
	}
	return c.files.writeMemory(string(data))
}
