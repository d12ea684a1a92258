package fs

import (
	"regexp"
	"sort"
	"strings"
)

// How edit_file found old_text, from strictest to loosest.
type matchKind int

const (
	matchNone   matchKind = iota
	matchExact            // byte for byte
	matchLines            // whole lines equal after trimming and collapsing whitespace
	matchTokens           // the same words separated by any whitespace
)

// hit is one place old_text was found: a byte span of the content and the
// text to put there.
type hit struct {
	start, end  int
	replacement string
}

// locate finds old in content with the strictest strategy that finds it and
// computes each hit's replacement from new.
func locate(content, old, new string) (matchKind, []hit) {
	if hs := exactHits(content, old, new); len(hs) > 0 {
		return matchExact, hs
	}
	if hs := lineHits(content, old, new); len(hs) > 0 {
		return matchLines, hs
	}
	if hs := tokenHits(content, old, new); len(hs) > 0 {
		return matchTokens, hs
	}
	return matchNone, nil
}

func exactHits(content, old, new string) []hit {
	var hs []hit
	for from := 0; ; {
		i := strings.Index(content[from:], old)
		if i < 0 {
			return hs
		}
		start := from + i
		hs = append(hs, hit{start: start, end: start + len(old), replacement: new})
		from = start + len(old)
	}
}

func normalize(line string) string { return strings.Join(strings.Fields(line), " ") }

// trimBlankLines drops leading and trailing blank lines.
func trimBlankLines(lines []string) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// lineHits matches old line by line with whitespace trimmed and collapsed,
// and re-indents new by the difference between the file's indentation and
// old's, so a model that got the indentation wrong still writes code that
// fits.
func lineHits(content, old, new string) []hit {
	oldLines := trimBlankLines(strings.Split(old, "\n"))
	if len(oldLines) == 0 {
		return nil
	}
	want := make([]string, len(oldLines))
	for i, l := range oldLines {
		want[i] = normalize(l)
	}
	lines, starts := splitLines(content)
	n := len(want)
	var hs []hit
	for i := 0; i+n <= len(lines); i++ {
		ok := true
		for j := range n {
			if normalize(lines[i+j]) != want[j] {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		start := starts[i]
		end := starts[i+n-1] + len(lines[i+n-1])
		repl := strings.Join(trimBlankLines(strings.Split(new, "\n")), "\n")
		repl = reindent(repl, indentOf(oldLines[0]), indentOf(lines[i]))
		if repl == "" && end < len(content) {
			end++ // deleting whole lines: take the newline too
		}
		hs = append(hs, hit{start: start, end: end, replacement: repl})
		i += n - 1
	}
	return hs
}

// tokenHits matches old's words separated by any run of whitespace, which
// also finds fragments inside lines.
func tokenHits(content, old, new string) []hit {
	words := strings.Fields(old)
	if len(words) == 0 || len(words) > 5000 {
		return nil
	}
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = regexp.QuoteMeta(w)
	}
	re, err := regexp.Compile(strings.Join(quoted, `\s+`))
	if err != nil {
		return nil
	}
	var hs []hit
	for _, m := range re.FindAllStringIndex(content, -1) {
		hs = append(hs, hit{start: m[0], end: m[1], replacement: strings.TrimSpace(new)})
	}
	return hs
}

func indentOf(line string) string {
	return line[:len(line)-len(strings.TrimLeft(line, " \t"))]
}

// reindent moves every line of text that starts with the indentation from
// to the indentation to. When one side indents with spaces and the other
// with tabs, the deeper levels are converted too (four spaces -> one tab
// when from is four spaces and to is one tab).
func reindent(text, from, to string) string {
	if from == to {
		return text
	}
	convert := func(extra string) string { return extra }
	switch {
	case from != "" && to != "" && allByte(from, ' ') && allByte(to, '\t') && len(from)%len(to) == 0:
		unit := len(from) / len(to)
		convert = func(extra string) string {
			if !allByte(extra, ' ') {
				return extra
			}
			return strings.Repeat("\t", len(extra)/unit) + strings.Repeat(" ", len(extra)%unit)
		}
	case from != "" && to != "" && allByte(from, '\t') && allByte(to, ' ') && len(to)%len(from) == 0:
		unit := len(to) / len(from)
		convert = func(extra string) string {
			return strings.ReplaceAll(extra, "\t", strings.Repeat(" ", unit))
		}
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(l, from); ok {
			extra := indentOf(rest)
			lines[i] = to + convert(extra) + rest[len(extra):]
		}
	}
	return strings.Join(lines, "\n")
}

func allByte(s string, b byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != b {
			return false
		}
	}
	return true
}

// splitLines returns content's lines (without "\n") and their byte offsets.
func splitLines(content string) (lines []string, starts []int) {
	pos := 0
	for {
		i := strings.IndexByte(content[pos:], '\n')
		if i < 0 {
			lines = append(lines, content[pos:])
			starts = append(starts, pos)
			return lines, starts
		}
		lines = append(lines, content[pos:pos+i])
		starts = append(starts, pos)
		pos += i + 1
	}
}

// lineOf is the 1-based line number of byte offset off.
func lineOf(content string, off int) int { return strings.Count(content[:off], "\n") + 1 }

// closest finds the window of file lines most similar to old (compared on
// up to its first 10 lines) and returns its 1-based line range and score
// in [0, 1].
func closest(content, old string) (first, last int, score float64) {
	oldLines := trimBlankLines(strings.Split(old, "\n"))
	if len(oldLines) == 0 {
		return 0, 0, 0
	}
	lines, _ := splitLines(content)
	const maxLines = 50_000
	if len(lines) > maxLines {
		lines = lines[:maxLines]
	}
	probe := oldLines[:min(len(oldLines), 10)]
	want := make([][]uint64, len(probe))
	for i, l := range probe {
		want[i] = bigrams(normalize(l))
	}
	have := make([][]uint64, len(lines))
	for i, l := range lines {
		have[i] = bigrams(normalize(l))
	}
	best, bestAt := -1.0, 0
	for i := 0; i < len(lines); i++ {
		sum := 0.0
		for j := range probe {
			if i+j < len(lines) {
				sum += dice(want[j], have[i+j])
			}
		}
		if s := sum / float64(len(probe)); s > best {
			best, bestAt = s, i
		}
	}
	end := min(bestAt+len(oldLines), len(lines))
	return bestAt + 1, end, best
}

// bigrams returns the sorted character pairs of s.
func bigrams(s string) []uint64 {
	rs := []rune(s)
	if len(rs) < 2 {
		if len(rs) == 1 {
			return []uint64{uint64(rs[0])}
		}
		return nil
	}
	out := make([]uint64, 0, len(rs)-1)
	for i := 0; i+1 < len(rs); i++ {
		out = append(out, uint64(rs[i])<<32|uint64(rs[i+1]))
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}

// dice is the Sørensen–Dice similarity of two sorted multisets.
func dice(a, b []uint64) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	common := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			common++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return 2 * float64(common) / float64(len(a)+len(b))
}

// lineNumberPrefix is what read_file puts before each line.
var lineNumberPrefix = regexp.MustCompile(`^\s*\d+\| ?`)

// stripLineNumbers removes read_file's "  12| " prefixes when every
// non-blank line of text has one (a model copied them into old_text).
func stripLineNumbers(text string) (string, bool) {
	lines := strings.Split(text, "\n")
	seen := false
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if !lineNumberPrefix.MatchString(l) {
			return text, false
		}
		seen = true
	}
	if !seen {
		return text, false
	}
	for i, l := range lines {
		lines[i] = lineNumberPrefix.ReplaceAllString(l, "")
	}
	return strings.Join(lines, "\n"), true
}
