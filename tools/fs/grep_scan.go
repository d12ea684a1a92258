package fs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// grepRun is one grep call's state while it walks.
type grepRun struct {
	tool          *Grep
	ctx           context.Context // the call's; a cancelled call stops between files
	search        *search
	re            *regexp.Regexp
	filter        filter
	mode          grepMode
	limit, offset int // limit 0: no count limit
	before, after int
	fileCap       int64 // the largest file read
	start         time.Time

	out  strings.Builder // content mode
	hits []fileHit       // the other modes
	seen int             // matching lines met so far (content mode)

	files, binary, large, unreadable int
	bytes                            int64
	budget                           string // why reading stopped, "" if it did not
	truncated, sizeCut, walkCapped   bool
}

// scan searches the file at rel; it returns fs.SkipAll when the search
// must stop.
func (g *grepRun) scan(rel string) error {
	if !g.filter.fileMatches(rel) {
		return nil
	}
	if err := g.ctx.Err(); err != nil {
		return err
	}
	if time.Since(g.start) > grepMaxDuration {
		g.budget = fmt.Sprintf("the %v time limit was reached", grepMaxDuration)
		return fs.SkipAll
	}
	if g.files >= grepMaxFiles {
		g.budget = fmt.Sprintf("the %d-file limit was reached", grepMaxFiles)
		return fs.SkipAll
	}
	f, err := g.search.open(rel)
	if err != nil {
		g.unreadable++
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		g.unreadable++
		return nil
	}
	if fi.Size() > g.fileCap {
		g.large++
		return nil
	}
	if g.bytes+fi.Size() > grepMaxBytes {
		g.budget = fmt.Sprintf("the %d MB read limit was reached", grepMaxBytes>>20)
		return fs.SkipAll
	}
	buf, err := io.ReadAll(io.LimitReader(f, g.fileCap+1))
	g.files++
	g.bytes += int64(len(buf))
	switch {
	case err != nil:
		g.unreadable++
		return nil
	case int64(len(buf)) > g.fileCap: // it grew since the stat
		g.large++
		return nil
	case bytes.IndexByte(buf[:min(len(buf), binarySniffBytes)], 0) >= 0:
		g.binary++
		return nil
	}
	shown := g.search.show(rel)
	switch g.mode {
	case modeFiles:
		if lines := matchingLines(g.re, buf, 1); len(lines) > 0 {
			g.hits = append(g.hits, fileHit{path: shown, modTime: fi.ModTime()})
		}
	case modeCount:
		if lines := matchingLines(g.re, buf, 0); len(lines) > 0 {
			g.hits = append(g.hits, fileHit{path: shown, modTime: fi.ModTime(), count: len(lines)})
		}
	case modeContent:
		return g.content(shown, buf)
	}
	return nil
}

// content writes the matching lines of one file, with context, in grep's
// format: "path:line: text" for a match, "path-line- text" around it, and
// "--" between groups that are not adjacent.
func (g *grepRun) content(shown string, buf []byte) error {
	lines := matchingLines(g.re, buf, 0)
	if len(lines) == 0 {
		return nil
	}
	starts := lineStarts(buf)
	isMatch := make(map[int]bool, len(lines))
	for _, n := range lines {
		isMatch[n] = true
	}
	var keep []int
	stop := false
	for _, n := range lines {
		g.seen++
		if g.seen <= g.offset {
			continue
		}
		if g.limit > 0 && g.seen > g.offset+g.limit {
			g.truncated, stop = true, true
			break
		}
		keep = append(keep, n)
	}
	total := len(starts)
	if total > 0 && starts[total-1] == len(buf) {
		total-- // the empty tail after a final newline is no line
	}
	context := g.before > 0 || g.after > 0
	printed := 0 // the last line number written for this file
	for _, n := range keep {
		lo, hi := max(1, n-g.before, printed+1), min(total, n+g.after)
		var sb strings.Builder
		if context && g.out.Len() > 0 && (printed == 0 || lo > printed+1) {
			sb.WriteString("--\n")
		}
		for k := lo; k <= hi; k++ {
			sep := "-"
			if isMatch[k] {
				sep = ":"
			}
			fmt.Fprintf(&sb, "%s%s%d%s %s\n", shown, sep, k, sep, shownLine(lineAt(buf, starts, k)))
		}
		if g.out.Len()+sb.Len() > grepMaxOutput {
			g.sizeCut = true
			return fs.SkipAll
		}
		g.out.WriteString(sb.String())
		printed = max(printed, hi)
	}
	if stop {
		return fs.SkipAll
	}
	return nil
}

// matchingLines returns the 1-based numbers of the lines of buf that re
// matches, at most max of them (0 for all). The expression runs over the
// whole buffer, so a file without a match costs one pass of it.
func matchingLines(re *regexp.Regexp, buf []byte, max int) []int {
	var lines []int
	line, counted := 1, 0 // line is the number of the line holding offset counted
	for pos := 0; pos < len(buf); {
		loc := re.FindIndex(buf[pos:])
		if loc == nil {
			break
		}
		start, end := pos+loc[0], pos+loc[1]
		first := bytes.LastIndexByte(buf[:start], '\n') + 1 // where the match's line starts
		if first == len(buf) {
			break // the empty tail after a final newline is no line
		}
		last := len(buf) // where it ends
		if i := bytes.IndexByte(buf[start:], '\n'); i >= 0 {
			last = start + i
		}
		line += bytes.Count(buf[counted:first], []byte{'\n'})
		counted = first
		// A match within one line stands on its own there (with (?m), ^, $
		// and \b see a line's ends the same way); only one that crosses a
		// newline needs the line checked alone.
		if end <= last || re.Match(buf[first:last]) {
			lines = append(lines, line)
			if max > 0 && len(lines) >= max {
				break
			}
		}
		pos = last + 1
	}
	return lines
}

// lineStarts is the offset each line of buf starts at.
func lineStarts(buf []byte) []int {
	starts := []int{0}
	for i := 0; ; {
		j := bytes.IndexByte(buf[i:], '\n')
		if j < 0 {
			return starts
		}
		i += j + 1
		starts = append(starts, i)
	}
}

// lineBytes is line k (0-based) of buf without its newline.
func lineBytes(buf []byte, starts []int, k int) []byte {
	end := len(buf)
	if k+1 < len(starts) {
		end = starts[k+1] - 1
	}
	return buf[starts[k]:end]
}

// lineAt is line n (1-based) of buf.
func lineAt(buf []byte, starts []int, n int) []byte { return lineBytes(buf, starts, n-1) }

// shownLine makes a line fit for the output: valid UTF-8, no "\r", at
// most grepMaxLineBytes.
func shownLine(line []byte) string {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) <= grepMaxLineBytes {
		return strings.ToValidUTF8(string(line), "\uFFFD")
	}
	cut := grepMaxLineBytes
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return strings.ToValidUTF8(string(line[:cut]), "\uFFFD") + fmt.Sprintf(" [… %d more bytes]", len(line)-cut)
}
