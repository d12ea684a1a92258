package tools

import "strings"

// Clip shortens s to at most n characters (runes), marking a cut with "…".
func Clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// OneLine folds s's whitespace (newlines included) to single spaces and
// clips it to n characters: a line for a list or a log.
func OneLine(s string, n int) string { return Clip(strings.Join(strings.Fields(s), " "), n) }
