package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/agent/skills"
)

// HashMismatchError is an archive whose sha256 is not the one expected
// (given by the user, the registry, or pinned in the lock file for that
// version). Nothing is installed.
type HashMismatchError struct {
	Slug, Version string
	Want, Got     string
	// From says who expected Want: "--sha256", "registry" or "lock file".
	From string
}

func (e *HashMismatchError) Error() string {
	return fmt.Sprintf("%s@%s: archive sha256 %s does not match %s from the %s; nothing installed",
		e.Slug, e.Version, e.Got, e.Want, e.From)
}

// ErrNotInstalled is returned for a skill that is not in the lock file.
var ErrNotInstalled = errors.New("not installed from a registry")

// Installer installs skills into one workspace's skills folder.
type Installer struct {
	// Dir is the workspace's skills/ folder; nothing is written outside it.
	Dir    string
	Client *Client
	// Now stamps installs (default time.Now).
	Now func() time.Time
}

// BlockedError: the registry flags the skill as malware; nothing is
// downloaded.
type BlockedError struct {
	Slug, Registry string
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("skill %s is flagged as malware by the registry %s and is not installed", e.Slug, e.Registry)
}

// Change is a downloaded, verified and unpacked version waiting beside the
// skills folder to be applied (Apply) or dropped (Discard).
type Change struct {
	Slug string
	// From is the installed pin (zero for a new install); To the new one.
	From, To skills.Locked
	// Added, Removed and Changed are file paths relative to the skill.
	Added, Removed, Changed []string
	// Suspicious: the registry flags the skill as suspicious (installed
	// all the same; say so to whoever installs it).
	Suspicious bool
	staged     string
}

// Same reports whether the change would leave the files as they are.
func (c *Change) Same() bool { return c.From.TreeSHA256 == c.To.TreeSHA256 }

// Prepare downloads slug at version ("" = the registry's latest), checks
// its hash against wantSHA (optional), the registry's and the lock file's
// for that version, and unpacks it into a temporary folder. For an
// installed skill the change lists the files that differ.
func (in *Installer) Prepare(ctx context.Context, slug, version, wantSHA string) (*Change, error) {
	if !ValidSlug(slug) {
		return nil, fmt.Errorf("%q is not a valid skill name", slug)
	}
	lock, err := skills.ReadLock(in.Dir)
	if err != nil {
		return nil, err
	}
	from, installed := lock.Skills[slug]
	if !installed {
		if _, err := os.Lstat(filepath.Join(in.Dir, slug)); err == nil {
			return nil, fmt.Errorf("skills/%s exists and was not installed from a registry; move it away first", slug)
		}
	}
	meta, err := in.Client.Meta(ctx, slug)
	if err != nil {
		return nil, err
	}
	if meta.MalwareBlocked {
		return nil, &BlockedError{Slug: slug, Registry: meta.Registry}
	}
	if version == "" {
		version = meta.Latest
	}
	var vers []Version
	if v, err := in.Client.Versions(ctx, meta.Registry, slug); err == nil {
		vers = v
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if version == "" && len(vers) > 0 {
		version = vers[0].Version
	}
	if version == "" {
		return nil, fmt.Errorf("skill %s: the registry names no version", slug)
	}
	archive, err := in.Client.Download(ctx, meta.Registry, slug, version)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(archive)
	got := hex.EncodeToString(sum[:])
	check := func(want, from string) error {
		if want != "" && !strings.EqualFold(want, got) {
			return &HashMismatchError{Slug: slug, Version: version, Want: want, Got: got, From: from}
		}
		return nil
	}
	if err := check(wantSHA, "--sha256"); err != nil {
		return nil, err
	}
	for _, v := range vers {
		if v.Version == version {
			if err := check(v.SHA256, "registry"); err != nil {
				return nil, err
			}
		}
	}
	if installed && from.Registry == meta.Registry && from.Version == version {
		if err := check(from.ArchiveSHA256, "lock file"); err != nil {
			return nil, err
		}
	}
	members, err := readArchive(archive)
	if err != nil {
		return nil, fmt.Errorf("%s@%s: %w", slug, version, err)
	}
	if err := os.MkdirAll(in.Dir, 0o755); err != nil {
		return nil, err
	}
	staged, err := os.MkdirTemp(in.Dir, ".staged-"+slug+"-")
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(staged)
		}
	}()
	dir := filepath.Join(staged, slug)
	if err := extract(members, dir); err != nil {
		return nil, fmt.Errorf("%s@%s: %w", slug, version, err)
	}
	newFiles, err := skills.TreeFiles(dir)
	if err != nil {
		return nil, err
	}
	c := &Change{Slug: slug, staged: staged, Suspicious: meta.Suspicious, To: skills.Locked{
		Registry: meta.Registry, Slug: slug, Version: version,
		ArchiveSHA256: got, TreeSHA256: skills.HashFiles(newFiles),
	}}
	if installed {
		c.From = from
		old, err := skills.TreeFiles(filepath.Join(in.Dir, slug))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		c.Added, c.Removed, c.Changed = diff(old, newFiles)
	} else {
		c.Added, _, _ = diff(nil, newFiles)
	}
	ok = true
	return c, nil
}

// Apply moves the staged version into place and pins it in the lock file.
// The old folder is renamed aside first and put back if the lock cannot be
// written.
func (in *Installer) Apply(c *Change) error {
	defer os.RemoveAll(c.staged)
	target := filepath.Join(in.Dir, c.Slug)
	aside := filepath.Join(c.staged, "old")
	hadOld := false
	if _, err := os.Lstat(target); err == nil {
		if err := os.Rename(target, aside); err != nil {
			return err
		}
		hadOld = true
	}
	if err := os.Rename(filepath.Join(c.staged, c.Slug), target); err != nil {
		if hadOld {
			_ = os.Rename(aside, target)
		}
		return err
	}
	now := time.Now
	if in.Now != nil {
		now = in.Now
	}
	pin := c.To
	pin.InstalledAt = now().UTC()
	err := skills.UpdateLock(in.Dir, func(l *skills.Lock) error {
		l.Skills[c.Slug] = pin
		return nil
	})
	if err != nil {
		_ = os.RemoveAll(target)
		if hadOld {
			_ = os.Rename(aside, target)
		}
		return fmt.Errorf("write %s: %w", skills.LockName, err)
	}
	return nil
}

// Discard drops a prepared change.
func (in *Installer) Discard(c *Change) { os.RemoveAll(c.staged) }

// Remove deletes a registry-installed skill and its pin. Skills written by
// hand are left alone (ErrNotInstalled).
func (in *Installer) Remove(slug string) error {
	if !ValidSlug(slug) {
		return fmt.Errorf("%q is not a valid skill name", slug)
	}
	lock, err := skills.ReadLock(in.Dir)
	if err != nil {
		return err
	}
	if _, ok := lock.Skills[slug]; !ok {
		return fmt.Errorf("skill %s: %w", slug, ErrNotInstalled)
	}
	trash, err := os.MkdirTemp(in.Dir, ".removed-"+slug+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(trash)
	target := filepath.Join(in.Dir, slug)
	if err := os.Rename(target, filepath.Join(trash, slug)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return skills.UpdateLock(in.Dir, func(l *skills.Lock) error {
		delete(l.Skills, slug)
		return nil
	})
}

// diff compares two TreeFiles maps.
func diff(old, cur map[string]string) (added, removed, changed []string) {
	for p, h := range cur {
		switch oh, ok := old[p]; {
		case !ok:
			added = append(added, p)
		case oh != h:
			changed = append(changed, p)
		}
	}
	for p := range old {
		if _, ok := cur[p]; !ok {
			removed = append(removed, p)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	sort.Strings(changed)
	return added, removed, changed
}
