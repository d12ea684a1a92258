package relay

import (
	"strings"
	"unicode/utf8"
)

// DefaultMessageLimit is used for channels that do not say (characters).
const DefaultMessageLimit = 4000

// Split cuts Markdown text into chunks of at most limit characters. It cuts
// at the last paragraph break, else line break, else space before the limit,
// and only mid-word when a single word is longer than a chunk. A chunk that
// ends inside a fenced code block closes the fence, and the next chunk
// reopens it with the same language, so every chunk renders on its own.
func Split(text string, limit int) []string {
	if limit <= 0 {
		limit = DefaultMessageLimit
	}
	if utf8.RuneCountInString(text) <= limit {
		return []string{text}
	}
	var chunks []string
	reopen := "" // fence line to prepend to the next chunk
	rest := text
	for rest != "" {
		budget := limit - utf8.RuneCountInString(reopen)
		closeLen := 4 // "\n```"
		if budget-closeLen < 16 {
			budget = limit // pathological limit: give up on fences
			reopen = ""
		}
		if utf8.RuneCountInString(rest) <= budget {
			chunks = append(chunks, reopen+rest)
			break
		}
		cut := cutPoint(rest, budget-closeLen)
		chunk, tail := rest[:cut], rest[cut:]
		full := reopen + chunk
		fence, open := openFence(full)
		if open {
			full = strings.TrimRight(full, "\n") + "\n```"
			reopen = fence + "\n"
		} else {
			reopen = ""
		}
		chunks = append(chunks, strings.TrimRight(full, " \n"))
		rest = strings.TrimLeft(tail, "\n")
		if open {
			rest = strings.TrimPrefix(tail, "\n")
		}
	}
	return chunks
}

// cutPoint returns a byte index at most max runes into s where it is best
// to cut.
func cutPoint(s string, max int) int {
	// Byte offset of the max-th rune.
	end := len(s)
	n := 0
	for i := range s {
		if n == max {
			end = i
			break
		}
		n++
	}
	window := s[:end]
	if i := strings.LastIndex(window, "\n\n"); i > len(window)/3 {
		return i + 1
	}
	if i := strings.LastIndexByte(window, '\n'); i > len(window)/3 {
		return i + 1
	}
	if i := strings.LastIndexByte(window, ' '); i > len(window)/3 {
		return i + 1
	}
	if end == 0 {
		_, size := utf8.DecodeRuneInString(s)
		return size
	}
	return end
}

// openFence reports whether s ends inside a fenced code block, and the
// fence line (with language) that opened it.
func openFence(s string) (string, bool) {
	open := false
	fence := ""
	for _, line := range strings.Split(s, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") {
			if open {
				open = false
			} else {
				open = true
				fence = t
			}
		}
	}
	return fence, open
}
