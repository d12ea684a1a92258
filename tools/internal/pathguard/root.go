package pathguard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Root is the set of file operations the tools use, on names relative to
// a folder. With the guard restricted it is an *os.Root opened on the
// allowed folder that holds the target: every call resolves the name one
// component at a time beneath that folder (openat on Linux) and refuses to
// leave it, so a symlink swapped in after the check cannot redirect it.
// Unrestricted, it is the plain file system below the volume root.
//
// A Root is safe for concurrent use; close it when done.
type Root interface {
	OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error)
	OpenRoot(name string) (*os.Root, error)
	Stat(name string) (fs.FileInfo, error)
	MkdirAll(name string, perm fs.FileMode) error
	Rename(oldname, newname string) error
	Remove(name string) error
	Close() error
}

var (
	_ Root = (*os.Root)(nil)
	_ Root = hostRoot("")
)

// Location is a checked path and the way to reach it without resolving it
// again from scratch.
type Location struct {
	// Real is the resolved absolute path, for messages (see Display).
	Real string
	// Root holds the target; the caller closes it.
	Root Root
	// Name is the target relative to Root ("." for Root itself). It had no
	// symlinks when it was checked.
	Name string
	// input is the path as given, for errors.
	input string
}

// Open resolves p relative to the workspace like Resolve and opens the
// folder to work through: with restrict on, the allowed root that holds
// the result. Every file operation on the target must go through loc.Root
// with loc.Name; the caller closes loc.Root.
func (g *Guard) Open(p string) (*Location, error) {
	real, err := g.Resolve(p)
	if err != nil {
		return nil, err
	}
	loc := &Location{Real: real, input: p}
	if !g.restrict {
		base := filepath.VolumeName(real) + string(filepath.Separator)
		loc.Root, loc.Name = hostRoot(base), relName(base, real)
		return loc, nil
	}
	for _, r := range g.roots {
		if !within(r, real) {
			continue
		}
		root, err := os.OpenRoot(r)
		if err != nil {
			return nil, fmt.Errorf("pathguard: open %s: %w", r, err)
		}
		loc.Root, loc.Name = root, relName(r, real)
		return loc, nil
	}
	// Resolve refuses what is outside every root; this is a safety net.
	return nil, &OutsideError{Path: p, Resolved: real, Roots: g.roots}
}

func relName(root, real string) string {
	rel, err := filepath.Rel(root, real)
	if err != nil {
		return real // cannot happen: real is within root
	}
	return rel
}

// Check turns an error of an operation on loc into one the model can act
// on: a path that escaped the root after it was checked (a symlink swapped
// in meanwhile) is reported as access denied; other errors pass through.
func (loc *Location) Check(err error) error {
	if err == nil || !Escaped(err) {
		return err
	}
	return &RaceError{Path: loc.input}
}

// RaceError reports a path that changed between the check and the use, and
// now leads outside the allowed roots.
type RaceError struct{ Path string }

func (e *RaceError) Error() string {
	return fmt.Sprintf("access denied: %q changed while it was being opened and now leads outside the workspace (a symlink was swapped in); restrictToWorkspace is on, so stay inside", e.Path)
}

// Escaped reports whether err is an *os.Root refusing a name that leads
// outside it. os does not export its sentinel, so the message is matched;
// too many symlink hops (ELOOP), which a swapping loop can also provoke, is
// treated the same way.
func Escaped(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "path escapes from parent") || errors.Is(err, syscall.ELOOP))
}

// hostRoot is the whole file system below a volume root, for the
// unrestricted guard: names are joined to it and used as they are.
type hostRoot string

func (h hostRoot) path(name string) string { return filepath.Join(string(h), name) }

func (h hostRoot) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(h.path(name), flag, perm)
}
func (h hostRoot) OpenRoot(name string) (*os.Root, error) { return os.OpenRoot(h.path(name)) }
func (h hostRoot) Stat(name string) (fs.FileInfo, error)  { return os.Stat(h.path(name)) }
func (h hostRoot) MkdirAll(name string, perm fs.FileMode) error {
	return os.MkdirAll(h.path(name), perm)
}
func (h hostRoot) Rename(oldname, newname string) error {
	return os.Rename(h.path(oldname), h.path(newname))
}
func (h hostRoot) Remove(name string) error { return os.Remove(h.path(name)) }
func (h hostRoot) Close() error             { return nil }
