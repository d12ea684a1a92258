package fs

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/tools"
)

// Limits of one find_files call.
const (
	findDefaultLimit = 200
	findMaxLimit     = 1000
	findMaxOutput    = 100_000 // characters
)

// FindFiles is the find_files tool.
type FindFiles struct{ *base }

var _ tools.Tool = (*FindFiles)(nil)

// NewFindFiles returns the find_files tool.
func NewFindFiles(opts Options) (*FindFiles, error) {
	return newTool(opts, "find_files", func(b *base) *FindFiles { return &FindFiles{b} })
}

func (t *FindFiles) Description() string {
	return "Find files by glob (\"*.go\", \"src/**/*_test.go\", \"*.{ts,tsx}\"), type (\"go\", \"py\", \"md\", ...) or words in their path (query), " +
		"in the workspace or the folder in path. Returns workspace-relative paths, most recently modified first (sort=path for alphabetical). " +
		"Files named in .gitignore, .git and dependency/build folders (node_modules, .venv, dist, ...) and symlinks are skipped. " +
		fmt.Sprintf("At most %d paths by default (head_limit, offset to page); a search visits at most %d entries and says when it stopped early. ", findDefaultLimit, maxWalk) +
		"Prefer this to find or ls through exec." + t.restrictNote()
}

func (t *FindFiles) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"path":         map[string]any{"type": "string", "description": "Folder (or file) to search in (default: the workspace)."},
			"query":        map[string]any{"type": "string", "description": "Words that must all appear in the path, ignoring case."},
			"glob":         map[string]any{"type": "string", "description": "Only paths matching this pattern: \"*.py\" matches names, \"tests/**/test_*.py\" paths below path."},
			"type":         map[string]any{"type": "string", "description": "Only files of this type: go, py, js, ts, md, json, yaml, ... (else taken as an extension)."},
			"include_dirs": map[string]any{"type": "boolean", "description": "List matching folders too, with a trailing / (default false)."},
			"sort":         map[string]any{"type": "string", "enum": []any{"modified", "path"}, "description": "modified: newest first (default); path: alphabetical."},
			"head_limit": map[string]any{"type": "integer", "minimum": 0, "maximum": findMaxLimit,
				"description": fmt.Sprintf("Most paths to return (default %d, 0 for no count limit).", findDefaultLimit)},
			"offset": map[string]any{"type": "integer", "minimum": 0, "maximum": 100_000, "description": "Skip this many paths first (to page)."},
		},
	}
}

type found struct {
	path    string
	modTime time.Time
}

func (t *FindFiles) Execute(ctx context.Context, args map[string]any) (tools.Result, error) {
	a := tools.Args(args)
	flt, err := newFilter(a.String("glob"), a.String("type"))
	if err != nil {
		return tools.Result{}, err
	}
	order := a.String("sort")
	if order == "" {
		order = "modified"
	}
	if order != "modified" && order != "path" {
		return tools.Result{}, fmt.Errorf("sort %q: use modified or path", order)
	}
	limit := min(max(a.Int("head_limit", findDefaultLimit), 0), findMaxLimit)
	offset := max(a.Int("offset", 0), 0)
	terms := strings.Fields(strings.ToLower(a.String("query")))
	dirs := a.Bool("include_dirs", false)

	s, err := t.openSearch(a.String("path"))
	if err != nil {
		return tools.Result{}, err
	}
	defer s.close()
	var hits []found
	capped, err := s.walk(ctx, dirs, func(rel string, isDir bool) error {
		if isDir && (flt.types != nil || !flt.globMatches(rel)) {
			return nil
		}
		if !isDir && !flt.fileMatches(rel) {
			return nil
		}
		shown := s.show(rel)
		lower := strings.ToLower(shown)
		for _, w := range terms {
			if !strings.Contains(lower, w) {
				return nil
			}
		}
		var mod time.Time
		if s.dir != nil {
			if fi, err := s.dir.Lstat(filepath.FromSlash(rel)); err == nil {
				mod = fi.ModTime()
			}
		} else if fi, err := s.loc.Root.Stat(s.loc.Name); err == nil {
			mod = fi.ModTime()
		}
		if isDir {
			shown += "/"
		}
		hits = append(hits, found{path: shown, modTime: mod})
		return nil
	})
	if err != nil {
		return tools.Result{}, err
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if order == "modified" && !hits[i].modTime.Equal(hits[j].modTime) {
			return hits[i].modTime.After(hits[j].modTime)
		}
		return hits[i].path < hits[j].path
	})
	return tools.Result{Content: renderFound(hits, s.shown, limit, offset, capped)}, nil
}

func renderFound(hits []found, shown string, limit, offset int, capped bool) string {
	total := len(hits)
	page := hits[min(offset, total):]
	more := false
	if limit > 0 && len(page) > limit {
		page, more = page[:limit], true
	}
	var sb strings.Builder
	cut := false
	for _, h := range page {
		if sb.Len()+len(h.path)+1 > findMaxOutput {
			cut = true
			break
		}
		sb.WriteString(h.path + "\n")
	}
	out := strings.TrimRight(sb.String(), "\n")
	switch {
	case out != "":
	case offset > 0 && total > 0:
		out = fmt.Sprintf("Nothing from offset %d: %d paths match.", offset, total)
	default:
		out = fmt.Sprintf("No files found in %s", shown)
	}
	var notes []string
	if more {
		notes = append(notes, fmt.Sprintf("(%d paths match; showing %d from offset %d; pass offset=%d for the next page)", total, limit, offset, offset+limit))
	}
	if cut {
		notes = append(notes, fmt.Sprintf("(output cut at %d characters; narrow the search)", findMaxOutput))
	}
	if capped {
		notes = append(notes, fmt.Sprintf("(search stopped early after visiting %d entries; results are incomplete, narrow it with path or glob)", maxWalk))
	}
	if len(notes) > 0 {
		out += "\n\n" + strings.Join(notes, "\n")
	}
	return out
}
