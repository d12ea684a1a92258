package fs

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/tools"
)

// Limits of one grep call.
const (
	grepDefaultLimit = 250              // results shown when the call sets no head_limit
	grepMaxLimit     = 1000             // the largest head_limit
	grepMaxContext   = 20               // lines of context_before or context_after
	grepMaxLineBytes = 300              // of one line shown; the rest is cut
	grepMaxOutput    = 100_000          // characters of output
	grepMaxFileBytes = 2 << 20          // a file in a folder search; larger ones are skipped
	grepMaxBytes     = 64 << 20         // read in all (and the cap for a file named explicitly)
	grepMaxFiles     = 20_000           // files read
	grepMaxDuration  = 20 * time.Second // spent reading and matching
	binarySniffBytes = 8 << 10          // a NUL byte in these makes a file binary
)

// Grep is the grep tool.
type Grep struct{ *base }

var _ tools.Tool = (*Grep)(nil)

// NewGrep returns the grep tool.
func NewGrep(opts Options) (*Grep, error) {
	return newTool(opts, "grep", func(b *base) *Grep { return &Grep{b} })
}

func (t *Grep) Description() string {
	return "Search file contents with a regular expression (Go RE2 syntax: no look-around or back-references; fixed_strings=true for plain text). " +
		"Searches the workspace, or the folder or file in path, line by line. " +
		"output_mode files_with_matches (the default) lists matching files, newest first; content shows \"path:line: text\" with optional context lines (\"path-line- text\"); count gives matches per file. " +
		"Narrow with glob (\"*.go\", \"src/**/*_test.go\") or type (\"go\", \"py\", \"ts\", \"md\"). " +
		"Files named in .gitignore, .git and dependency/build folders (node_modules, .venv, dist, ...), symlinks and binary files are skipped. " +
		fmt.Sprintf("At most %d results by default (head_limit, offset to page); a search reads at most %d files and %d MB (and stops after %v), files over %d MB are skipped, and long lines are cut; the output says when a limit was hit. ",
			grepDefaultLimit, grepMaxFiles, grepMaxBytes>>20, grepMaxDuration, grepMaxFileBytes>>20) +
		"Prefer this to running grep through exec." + t.restrictNote()
}

func (t *Grep) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"pattern":          map[string]any{"type": "string", "minLength": 1, "description": "Regular expression (RE2) or, with fixed_strings, plain text."},
			"path":             map[string]any{"type": "string", "description": "Folder or file to search (default: the workspace)."},
			"glob":             map[string]any{"type": "string", "description": "Only files matching this pattern: \"*.py\" matches names, \"tests/**/test_*.py\" paths below path."},
			"type":             map[string]any{"type": "string", "description": "Only files of this type: go, py, js, ts, md, json, yaml, ... (else taken as an extension)."},
			"case_insensitive": map[string]any{"type": "boolean", "description": "Ignore case (default false)."},
			"fixed_strings":    map[string]any{"type": "boolean", "description": "Treat pattern as plain text (default false)."},
			"output_mode": map[string]any{"type": "string", "enum": []any{"content", "files_with_matches", "count"},
				"description": "content: matching lines; files_with_matches: file paths only; count: matching lines per file. Default files_with_matches."},
			"context_before": map[string]any{"type": "integer", "minimum": 0, "maximum": grepMaxContext, "description": "Lines shown before each match (content mode)."},
			"context_after":  map[string]any{"type": "integer", "minimum": 0, "maximum": grepMaxContext, "description": "Lines shown after each match (content mode)."},
			"head_limit": map[string]any{"type": "integer", "minimum": 0, "maximum": grepMaxLimit,
				"description": fmt.Sprintf("Most results to show: matching lines in content mode, files otherwise (default %d, 0 for no count limit).", grepDefaultLimit)},
			"offset":      map[string]any{"type": "integer", "minimum": 0, "maximum": 100_000, "description": "Skip this many results first (to page)."},
			"max_matches": map[string]any{"type": "integer", "minimum": 1, "maximum": grepMaxLimit, "description": "Older name for head_limit in content mode."},
			"max_results": map[string]any{"type": "integer", "minimum": 1, "maximum": grepMaxLimit, "description": "Older name for head_limit in the other modes."},
		},
		"required": []any{"pattern"},
	}
}

// grepMode is what grep reports.
type grepMode string

const (
	modeContent grepMode = "content"
	modeFiles   grepMode = "files_with_matches"
	modeCount   grepMode = "count"
)

func (t *Grep) Execute(ctx context.Context, args map[string]any) (tools.Result, error) {
	a := tools.Args(args)
	g := &grepRun{tool: t, ctx: ctx, mode: modeFiles, offset: max(a.Int("offset", 0), 0), start: time.Now()}
	if m := a.String("output_mode"); m != "" {
		g.mode = grepMode(m)
	}
	switch g.mode {
	case modeContent, modeFiles, modeCount:
	default:
		return tools.Result{}, fmt.Errorf("output_mode %q: use content, files_with_matches or count", g.mode)
	}
	re, err := compileGrep(a.String("pattern"), a.Bool("fixed_strings", false), a.Bool("case_insensitive", false))
	if err != nil {
		return tools.Result{}, err
	}
	g.re = re
	if g.filter, err = newFilter(a.String("glob"), a.String("type")); err != nil {
		return tools.Result{}, err
	}
	g.limit = grepDefaultLimit
	switch {
	case a.Has("head_limit"):
		g.limit = a.Int("head_limit", grepDefaultLimit)
	case g.mode == modeContent && a.Has("max_matches"):
		g.limit = a.Int("max_matches", grepDefaultLimit)
	case g.mode != modeContent && a.Has("max_results"):
		g.limit = a.Int("max_results", grepDefaultLimit)
	}
	g.limit = min(max(g.limit, 0), grepMaxLimit)
	g.before = min(max(a.Int("context_before", 0), 0), grepMaxContext)
	g.after = min(max(a.Int("context_after", 0), 0), grepMaxContext)

	s, err := t.openSearch(a.String("path"))
	if err != nil {
		return tools.Result{}, err
	}
	defer s.close()
	g.search = s
	g.fileCap = grepMaxFileBytes
	if s.dir == nil {
		g.fileCap = grepMaxBytes
	}
	g.walkCapped, err = s.walk(ctx, false, func(rel string, _ bool) error { return g.scan(rel) })
	if err != nil {
		return tools.Result{}, err
	}
	return tools.Result{Content: g.render(a.String("pattern"))}, nil
}

// compileGrep builds the expression; (?m) makes ^ and $ match at line
// ends, as they do when each line is searched alone.
func compileGrep(pattern string, fixed, fold bool) (*regexp.Regexp, error) {
	if pattern == "" {
		return nil, fmt.Errorf("pattern is empty")
	}
	if fixed {
		pattern = regexp.QuoteMeta(pattern)
	}
	flags := "(?m)"
	if fold {
		flags = "(?mi)"
	}
	re, err := regexp.Compile(flags + pattern)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression (Go RE2 syntax; set fixed_strings to search plain text): %w", err)
	}
	return re, nil
}

// fileHit is a matching file for files_with_matches and count.
type fileHit struct {
	path    string
	modTime time.Time
	count   int
}

// render puts together the results and the notes saying what was left out.
func (g *grepRun) render(pattern string) string {
	var body string
	switch g.mode {
	case modeContent:
		body = strings.TrimRight(g.out.String(), "\n")
	default:
		sort.SliceStable(g.hits, func(i, j int) bool {
			if !g.hits[i].modTime.Equal(g.hits[j].modTime) {
				return g.hits[i].modTime.After(g.hits[j].modTime)
			}
			return g.hits[i].path < g.hits[j].path
		})
		page := g.hits[min(g.offset, len(g.hits)):]
		if g.limit > 0 && len(page) > g.limit {
			page, g.truncated = page[:g.limit], true
		}
		var sb strings.Builder
		for _, h := range page {
			line := h.path
			if g.mode == modeCount {
				line = fmt.Sprintf("%s: %d", h.path, h.count)
			}
			if sb.Len()+len(line) > grepMaxOutput {
				g.sizeCut = true
				break
			}
			sb.WriteString(line + "\n")
		}
		body = strings.TrimRight(sb.String(), "\n")
	}
	switch {
	case body != "":
	case g.offset > 0 && (g.seen > 0 || len(g.hits) > 0):
		body = fmt.Sprintf("Nothing from offset %d: there are %d results in all.", g.offset, max(g.seen, len(g.hits)))
	default:
		body = fmt.Sprintf("No matches for %q in %s", pattern, g.search.shown)
	}
	return body + g.notes()
}

func (g *grepRun) notes() string {
	var ns []string
	if g.truncated {
		ns = append(ns, fmt.Sprintf("(more results: showing %d from offset %d; pass offset=%d for the next page or narrow the search)", g.limit, g.offset, g.offset+g.limit))
	}
	if g.sizeCut {
		ns = append(ns, fmt.Sprintf("(output cut at %d characters; narrow the search or use head_limit)", grepMaxOutput))
	}
	if g.budget != "" {
		ns = append(ns, fmt.Sprintf("(search stopped early: %s after reading %d files, %.1f MB; results are incomplete, narrow it with path, glob or type)", g.budget, g.files, float64(g.bytes)/(1<<20)))
	}
	if g.walkCapped {
		ns = append(ns, fmt.Sprintf("(search stopped early after visiting %d entries; results are incomplete, narrow it with path, glob or type)", maxWalk))
	}
	if g.binary > 0 {
		ns = append(ns, fmt.Sprintf("(skipped %d binary files)", g.binary))
	}
	if g.large > 0 {
		ns = append(ns, fmt.Sprintf("(skipped %d files larger than %d MB; grep one by path to search it)", g.large, grepMaxFileBytes>>20))
	}
	if g.unreadable > 0 {
		ns = append(ns, fmt.Sprintf("(skipped %d unreadable files)", g.unreadable))
	}
	if g.mode == modeCount && len(g.hits) > 0 {
		total := 0
		for _, h := range g.hits {
			total += h.count
		}
		ns = append(ns, fmt.Sprintf("(%d matching lines in %d files)", total, len(g.hits)))
	}
	if len(ns) == 0 {
		return ""
	}
	return "\n\n" + strings.Join(ns, "\n")
}
