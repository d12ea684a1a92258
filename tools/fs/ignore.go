package fs

import (
	"bufio"
	"bytes"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// maxIgnoreFileBytes bounds the .gitignore files read; beyond it the rest
// is not read.
const maxIgnoreFileBytes = 256 << 10

// ignoreRule is one pattern line of a .gitignore file.
type ignoreRule struct {
	pattern  string // a doublestar pattern
	negate   bool   // "!": re-include what an earlier rule excluded
	dirOnly  bool   // a trailing "/": folders only
	anchored bool   // had a "/" before its end: matched against the path from the file's folder, not the name
}

// ignoreFile is the rules of one .gitignore, in order.
type ignoreFile struct{ rules []ignoreRule }

// parseIgnore reads .gitignore syntax: blank lines and "#" comments are
// skipped, "!" negates, "\" escapes a leading "#" or "!" (and any glob
// character), a trailing "/" means folders only, and a pattern with a "/"
// elsewhere is relative to the file's folder while one without matches a
// name at any depth. "**" spans folders. Invalid patterns are dropped.
func parseIgnore(data []byte) *ignoreFile {
	f := &ignoreFile{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxIgnoreFileBytes)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasSuffix(line, `\ `) {
			line = strings.TrimRight(line, " ")
		}
		var r ignoreRule
		if rest, ok := strings.CutPrefix(line, "!"); ok {
			r.negate, line = true, rest
		}
		if rest, ok := strings.CutSuffix(line, "/"); ok {
			r.dirOnly, line = true, rest
		}
		if strings.Contains(line, "/") {
			r.anchored, line = true, strings.TrimPrefix(line, "/")
		}
		if line == "" || !doublestar.ValidatePattern(line) {
			continue
		}
		r.pattern = line
		f.rules = append(f.rules, r)
	}
	return f
}

// match decides rel (slash-separated, relative to the file's folder): the
// last rule that matches wins. decided is false when no rule matches.
func (f *ignoreFile) match(rel string, isDir bool) (ignored, decided bool) {
	for i := len(f.rules) - 1; i >= 0; i-- {
		r := f.rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		if r.matches(rel) {
			return !r.negate, true
		}
	}
	return false, false
}

func (r ignoreRule) matches(rel string) bool {
	if !r.anchored {
		return doublestar.MatchUnvalidated(r.pattern, path.Base(rel))
	}
	if !doublestar.MatchUnvalidated(r.pattern, rel) {
		return false
	}
	// "dir/**" is what is inside dir, not dir itself (doublestar matches
	// both), so "!dir/keep" can still re-include something.
	if base, ok := strings.CutSuffix(r.pattern, "/**"); ok && doublestar.MatchUnvalidated(base, rel) {
		return false
	}
	return true
}

// ignorer decides what a walk skips: the folders list_dir skips (.git,
// node_modules, ...) and what .gitignore files say. It is used by one walk
// at a time and is not safe for concurrent use.
type ignorer struct {
	// outer are the .gitignore files of the folders above the walk's root
	// (up to the workspace), outermost first, each with the root's path
	// relative to its folder.
	outer []scopedIgnore
	// inner are the .gitignore files found during the walk, by folder
	// relative to the root ("." for the root).
	inner map[string]*ignoreFile
}

type scopedIgnore struct {
	file   *ignoreFile
	prefix string
}

// skip reports whether the entry at rel (relative to the walk's root) is
// left out. As in git, deeper .gitignore files override shallower ones,
// and nothing inside a skipped folder is looked at.
func (ig *ignorer) skip(rel string, isDir bool) bool {
	if isDir && ignored[path.Base(rel)] {
		return true
	}
	out := false
	for _, o := range ig.outer {
		if v, ok := o.file.match(path.Join(o.prefix, rel), isDir); ok {
			out = v
		}
	}
	// The folders above rel, from the root down.
	dir, sub := ".", rel
	for {
		if f := ig.inner[dir]; f != nil {
			if v, ok := f.match(sub, isDir); ok {
				out = v
			}
		}
		first, rest, more := strings.Cut(sub, "/")
		if !more {
			return out
		}
		dir, sub = path.Join(dir, first), rest
	}
}
