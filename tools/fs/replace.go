package fs

import (
	"fmt"
	"strings"
)

// text is a file's content with "\n" line ends, and whether the file used
// "\r\n" (restored by bytes). edit_file and apply_patch match and edit in
// this form so a model's "\n" finds text in a CRLF file.
type text struct {
	body string
	crlf bool
}

func decodeText(raw []byte) text {
	s := string(raw)
	if strings.Contains(s, "\r\n") {
		return text{body: strings.ReplaceAll(s, "\r\n", "\n"), crlf: true}
	}
	return text{body: s}
}

// bytes is the content with the file's own line ends.
func (t text) bytes() []byte {
	if t.crlf {
		return []byte(strings.ReplaceAll(t.body, "\n", "\r\n"))
	}
	return []byte(t.body)
}

// replaced describes one successful replacement.
type replaced struct {
	body  string    // the content after it
	kind  matchKind // how old_text was found
	lines []int     // 1-based line of each hit, in the content before
	old   int       // lines the hits covered
	new   int       // lines their replacements have
}

// AmbiguousError is old_text found more than once where one place was
// wanted.
type AmbiguousError struct {
	Path  string
	Lines []int
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("old_text occurs %d times in %s (at lines %s); add surrounding lines to make it unique",
		len(e.Lines), e.Path, joinInts(e.Lines))
}

// NotFoundError is old_text found nowhere; Closest shows the most similar
// lines of the file, if any are similar enough.
type NotFoundError struct {
	Path    string
	Closest string // "" when nothing is similar
}

func (e *NotFoundError) Error() string {
	if e.Closest == "" {
		return fmt.Sprintf("old_text was not found in %s and no similar lines exist; read the file again (read_file) and copy the text exactly", e.Path)
	}
	return fmt.Sprintf("old_text was not found in %s. %sCopy the exact text from there (without the line-number prefixes) and retry", e.Path, e.Closest)
}

// replaceText replaces old with new in body: the exact text first, then a
// whitespace-tolerant match (see locate), then the same with read_file's
// line-number prefixes stripped from both. Several hits are an
// *AmbiguousError unless all is set; none is a *NotFoundError. shown names
// the file in errors. body, old and new use "\n" line ends.
func replaceText(shown, body, old, new string, all bool) (replaced, error) {
	kind, hits := locate(body, old, new)
	if kind == matchNone {
		if stripped, ok := stripLineNumbers(old); ok {
			if s, ok := stripLineNumbers(new); ok {
				new = s
			}
			kind, hits = locate(body, stripped, new)
		}
	}
	if kind == matchNone {
		return replaced{}, &NotFoundError{Path: shown, Closest: closestHint(body, old)}
	}
	r := replaced{kind: kind, lines: make([]int, len(hits))}
	for i, h := range hits {
		r.lines[i] = lineOf(body, h.start)
	}
	if len(hits) > 1 && !all {
		return replaced{}, &AmbiguousError{Path: shown, Lines: r.lines}
	}
	var sb strings.Builder
	prev := 0
	for _, h := range hits {
		sb.WriteString(body[prev:h.start])
		sb.WriteString(h.replacement)
		prev = h.end
		r.old += countLines(body[h.start:h.end])
		r.new += countLines(h.replacement)
	}
	sb.WriteString(body[prev:])
	r.body = sb.String()
	return r, nil
}

// how says how a fuzzy match was found, for the result ("" when exact).
func (r replaced) how() string {
	switch r.kind {
	case matchLines:
		return " (matched ignoring whitespace and indentation differences)"
	case matchTokens:
		return " (matched ignoring whitespace differences)"
	}
	return ""
}

// closestHint shows the lines of body most similar to old, or "" when
// nothing comes close.
func closestHint(body, old string) string {
	first, last, score := closest(body, old)
	if first == 0 || score < 0.3 {
		return ""
	}
	lines, _ := splitLines(body)
	var sb strings.Builder
	fmt.Fprintf(&sb, "The closest lines (%d-%d, %.0f%% similar) are:\n", first, last, score*100)
	for n := first; n <= last && n-first < 30; n++ {
		fmt.Fprintf(&sb, "%6d| %s\n", n, lines[n-1])
	}
	return sb.String()
}

// countLines is how many lines s spans; a final newline ends a line rather
// than starting one.
func countLines(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}

func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ", ")
}
