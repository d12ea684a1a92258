package fs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nanobot-go/nanobot/tools"
)

// ignored are folders (and clutter files) list_dir leaves out: version
// control, dependencies, caches and build output. Listing one of them by
// name still works.
var ignored = map[string]bool{
	".git": true, ".hg": true, ".svn": true, "node_modules": true, "__pycache__": true, ".venv": true, "venv": true,
	".mypy_cache": true, ".pytest_cache": true, ".ruff_cache": true, ".tox": true, ".nox": true, "dist": true, "build": true,
	".next": true, ".nuxt": true, ".cache": true, ".idea": true, ".gradle": true, ".DS_Store": true, ".tmp": true,
}

// maxWalk bounds how many entries a recursive listing visits to count.
const maxWalk = 100_000

// maxEntriesCap bounds max_entries.
const maxEntriesCap = 5000

// ListDir is the list_dir tool.
type ListDir struct{ *base }

var _ tools.Tool = (*ListDir)(nil)

// NewListDir returns the list_dir tool.
func NewListDir(opts Options) (*ListDir, error) {
	return newTool(opts, "list_dir", func(b *base) *ListDir { return &ListDir{b} })
}

func (t *ListDir) Description() string {
	return fmt.Sprintf("List a folder: sub-folders end with /, files show their size, symlinks their target. "+
		"recursive=true lists the whole tree (paths relative to the folder). "+
		"Version-control, dependency, cache and build folders (.git, node_modules, __pycache__, .venv, dist, build, ...) are skipped; list them by name if needed. "+
		"At most max_entries entries are shown (default %d).%s", t.opts.MaxListEntries, t.restrictNote())
}

func (t *ListDir) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"path":        map[string]any{"type": "string", "description": "Folder, relative to the workspace or absolute (default: the workspace)."},
			"recursive":   map[string]any{"type": "boolean", "description": "List sub-folders too (default false)."},
			"max_entries": map[string]any{"type": "integer", "minimum": 1, "description": fmt.Sprintf("Most entries to show (default %d, at most %d).", t.opts.MaxListEntries, maxEntriesCap)},
		},
	}
}

func (t *ListDir) Execute(ctx context.Context, args map[string]any) (tools.Result, error) {
	a := tools.Args(args)
	path := a.String("path")
	if path == "" {
		path = "."
	}
	loc, err := t.open(path)
	if err != nil {
		return tools.Result{}, err
	}
	defer loc.Root.Close()
	shown := t.paths.Display(loc.Real)
	fi, err := loc.Root.Stat(loc.Name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return tools.Result{}, fmt.Errorf("%s does not exist", shown)
		}
		return tools.Result{}, loc.Check(err)
	}
	if !fi.IsDir() {
		return tools.Result{}, fmt.Errorf("%s is a file, not a folder; use read_file to read it", shown)
	}
	// The listing works through a handle on the folder itself: names,
	// sizes and link targets all come from it.
	dir, err := loc.Root.OpenRoot(loc.Name)
	if err != nil {
		return tools.Result{}, loc.Check(err)
	}
	defer dir.Close()
	limit := min(a.Int("max_entries", t.opts.MaxListEntries), maxEntriesCap)
	l := &listing{dir: dir, limit: limit, skipped: map[string]bool{}}
	if a.Bool("recursive", false) {
		err = l.walk(ctx)
	} else {
		err = l.flat()
	}
	if err != nil {
		return tools.Result{}, loc.Check(err)
	}
	return tools.Result{Content: l.render(shown)}, nil
}

// listing collects entries up to limit and counts the rest.
type listing struct {
	dir     *os.Root
	limit   int
	lines   []string
	total   int
	more    bool // stopped counting at maxWalk
	skipped map[string]bool
}

// add records the entry at rel (slash-separated, relative to l.dir).
func (l *listing) add(rel string, d fs.DirEntry) {
	l.total++
	if len(l.lines) >= l.limit {
		return
	}
	l.lines = append(l.lines, l.describe(rel, d))
}

func (l *listing) flat() error {
	entries, err := fs.ReadDir(l.dir.FS(), ".")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if ignored[e.Name()] {
			l.skipped[e.Name()] = true
			continue
		}
		l.add(e.Name(), e)
	}
	return nil
}

// walk lists the tree without following symlinks, so a listing never
// leaves the folder it started in.
func (l *listing) walk(ctx context.Context) error {
	return fs.WalkDir(l.dir.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			return nil // unreadable entry: skip it, keep listing
		}
		if p == "." {
			return nil
		}
		if ignored[d.Name()] {
			l.skipped[d.Name()] = true
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if l.total >= maxWalk {
			l.more = true
			return fs.SkipAll
		}
		if l.total%1000 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		l.add(p, d)
		return nil
	})
}

func (l *listing) render(shown string) string {
	var sb strings.Builder
	switch {
	case l.total == 0:
		fmt.Fprintf(&sb, "Folder %s is empty.", shown)
	case len(l.lines) < l.total:
		count := fmt.Sprint(l.total)
		if l.more {
			count = "more than " + count
		}
		fmt.Fprintf(&sb, "Folder %s: showing %d of %s entries (raise max_entries or list a sub-folder).\n", shown, len(l.lines), count)
	default:
		fmt.Fprintf(&sb, "Folder %s (%d entries):\n", shown, l.total)
	}
	sb.WriteString(strings.Join(l.lines, "\n"))
	if len(l.skipped) > 0 {
		names := make([]string, 0, len(l.skipped))
		for n := range l.skipped {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(&sb, "\n(skipped: %s)", strings.Join(names, ", "))
	}
	return strings.TrimRight(sb.String(), "\n")
}

// describe shows one entry. Sizes and link targets are looked up through
// l.dir, not with the DirEntry's own Info, which would stat by path name.
func (l *listing) describe(rel string, d fs.DirEntry) string {
	shown := filepath.FromSlash(rel)
	switch {
	case d.Type()&fs.ModeSymlink != 0:
		target, err := l.dir.Readlink(rel)
		if err != nil {
			target = "?"
		}
		return shown + " -> " + target
	case d.IsDir():
		return shown + "/"
	}
	info, err := l.dir.Lstat(rel)
	if err != nil {
		return shown
	}
	return shown + "  " + humanSize(info.Size())
}

func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "KMGTPE"[exp])
}
