package fs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/nanobot-go/nanobot/tools/internal/pathguard"
)

// search is where grep and find_files look: a checked path and, when it is
// a folder, a handle on it that every walk and open goes through (so
// nothing is reached by a path name outside it, and with
// RestrictToWorkspace nothing outside the workspace).
type search struct {
	loc   *pathguard.Location
	shown string
	dir   *os.Root // nil when the path is a file
	ign   *ignorer
	show  func(rel string) string
}

// openSearch checks p (default: the workspace) and opens it; the caller
// closes the search.
func (b *base) openSearch(p string) (*search, error) {
	if p == "" {
		p = "."
	}
	loc, err := b.open(p)
	if err != nil {
		return nil, err
	}
	s := &search{loc: loc, shown: b.paths.Display(loc.Real)}
	s.show = func(rel string) string {
		if s.dir == nil {
			return filepath.ToSlash(s.shown) // a file search: rel is its name
		}
		return filepath.ToSlash(b.paths.Display(filepath.Join(loc.Real, filepath.FromSlash(rel))))
	}
	fi, err := loc.Root.Stat(loc.Name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		loc.Root.Close()
		return nil, fmt.Errorf("%s does not exist", s.shown)
	case err != nil:
		loc.Root.Close()
		return nil, loc.Check(err)
	case !fi.IsDir() && !fi.Mode().IsRegular():
		loc.Root.Close()
		return nil, fmt.Errorf("%s is neither a file nor a folder", s.shown)
	case !fi.IsDir():
		return s, nil
	}
	if s.dir, err = loc.Root.OpenRoot(loc.Name); err != nil {
		loc.Root.Close()
		return nil, loc.Check(err)
	}
	s.ign = &ignorer{outer: b.outerIgnores(loc.Real), inner: map[string]*ignoreFile{}}
	return s, nil
}

func (s *search) close() {
	if s.dir != nil {
		s.dir.Close()
	}
	s.loc.Root.Close()
}

// open opens the file at rel (relative to the folder searched; ignored for
// a file search).
func (s *search) open(rel string) (*os.File, error) {
	if s.dir == nil {
		return s.loc.Root.OpenFile(s.loc.Name, os.O_RDONLY, 0)
	}
	return s.dir.Open(filepath.FromSlash(rel))
}

// outerIgnores reads the .gitignore files of the folders from the
// workspace down to real's parent, so searching a sub-folder honours the
// rules written above it. Outside the workspace there are none.
func (b *base) outerIgnores(real string) []scopedIgnore {
	ws := b.paths.Workspace()
	rel, err := filepath.Rel(ws, real)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return nil
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	var out []scopedIgnore
	for i := range parts {
		name := filepath.Join(ws, filepath.Join(parts[:i]...), ".gitignore")
		loc, err := b.paths.Open(name)
		if err != nil {
			continue
		}
		data, err := readCapped(loc.Root, loc.Name, maxIgnoreFileBytes)
		loc.Root.Close()
		if err != nil {
			continue
		}
		out = append(out, scopedIgnore{file: parseIgnore(data), prefix: path.Join(parts[i:]...)})
	}
	return out
}

// opener is what readCapped needs of a pathguard.Root or an os.Root.
type opener interface {
	OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error)
}

// readCapped reads at most n bytes of the regular file name.
func readCapped(root opener, name string, n int64) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	return io.ReadAll(io.LimitReader(f, n))
}

// errWalkCapped ends a walk that visited maxWalk entries.
var errWalkCapped = errors.New("walk capped")

// walk visits the folder's regular files, and its folders when dirs is
// set, in lexical order, with slash-separated paths relative to it. It
// does not follow symlinks (they are skipped: a link to a file is not
// read either), skips what s.ign says, and stops after maxWalk entries,
// reporting that with capped. visit returns fs.SkipAll to stop early. On a
// file search it visits the file alone.
func (s *search) walk(ctx context.Context, dirs bool, visit func(rel string, isDir bool) error) (capped bool, err error) {
	if s.dir == nil {
		err := visit(path.Base(filepath.ToSlash(s.loc.Name)), false)
		if errors.Is(err, fs.SkipAll) {
			err = nil
		}
		return false, err
	}
	seen := 0
	err = fs.WalkDir(s.dir.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			return nil // unreadable: leave it out
		}
		if p == "." {
			s.loadIgnore(".")
			return nil
		}
		isDir := d.IsDir()
		if !isDir && !d.Type().IsRegular() {
			return nil // symlinks, sockets, pipes, devices
		}
		if s.ign.skip(p, isDir) {
			if isDir {
				return fs.SkipDir
			}
			return nil
		}
		if seen++; seen > maxWalk {
			return errWalkCapped
		}
		if seen%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if isDir {
			s.loadIgnore(p)
			if !dirs {
				return nil
			}
		}
		return visit(p, isDir)
	})
	switch {
	case errors.Is(err, errWalkCapped):
		return true, nil
	case errors.Is(err, fs.SkipAll):
		return false, nil
	}
	return false, s.loc.Check(err)
}

// loadIgnore reads the .gitignore of the folder at rel, if it has one.
func (s *search) loadIgnore(rel string) {
	data, err := readCapped(s.dir, filepath.Join(filepath.FromSlash(rel), ".gitignore"), maxIgnoreFileBytes)
	if err == nil {
		s.ign.inner[rel] = parseIgnore(data)
	}
}
