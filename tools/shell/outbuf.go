package shell

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// outputBuffer holds a session's unread output within max characters: the
// first max/2 and the most recent rest, counting what fell in between, so a
// program that prints for hours costs bounded memory. Drain hands it over
// and starts again. It is not safe for concurrent use (session.mu guards
// it).
type outputBuffer struct {
	max       int
	head      strings.Builder
	headChars int
	tail      []string
	tailChars int
	dropped   int // characters between head and tail
}

func newOutputBuffer(maxChars int) *outputBuffer { return &outputBuffer{max: maxChars} }

func (b *outputBuffer) write(s string) {
	if s == "" {
		return
	}
	if b.dropped == 0 && len(b.tail) == 0 {
		if room := b.max/2 - b.headChars; room > 0 {
			n := utf8.RuneCountInString(s)
			if n <= room {
				b.head.WriteString(s)
				b.headChars += n
				return
			}
			cut := byteIndexOfRune(s, room)
			b.head.WriteString(s[:cut])
			b.headChars += room
			s = s[cut:]
		}
	}
	n := utf8.RuneCountInString(s)
	b.tail = append(b.tail, s)
	b.tailChars += n
	keep := b.max - b.headChars
	for b.tailChars > keep {
		over := b.tailChars - keep
		first := b.tail[0]
		fc := utf8.RuneCountInString(first)
		if fc <= over {
			b.tail = b.tail[1:]
			b.tailChars -= fc
			b.dropped += fc
			continue
		}
		b.tail[0] = first[byteIndexOfRune(first, over):]
		b.tailChars -= over
		b.dropped += over
	}
}

// empty reports whether nothing was written since the last drain.
func (b *outputBuffer) empty() bool { return b.headChars == 0 && b.tailChars == 0 && b.dropped == 0 }

// text returns the retained output with the gap marked, without draining.
func (b *outputBuffer) text() string {
	var sb strings.Builder
	sb.WriteString(b.head.String())
	if b.dropped > 0 {
		sb.WriteString(gapNote(b.dropped))
	}
	for _, s := range b.tail {
		sb.WriteString(s)
	}
	return sb.String()
}

// drain returns the retained output (with the gap marked) and empties the
// buffer.
func (b *outputBuffer) drain() string {
	s := b.text()
	b.head.Reset()
	b.headChars, b.tail, b.tailChars, b.dropped = 0, nil, 0, 0
	return s
}

func gapNote(n int) string {
	return "\n\n... [" + strconv.Itoa(n) + " characters truncated] ...\n\n"
}

// clip keeps the first and last max/2 characters of s, marking the cut.
func clip(s string, maxChars int) string {
	n := utf8.RuneCountInString(s)
	if n <= maxChars {
		return s
	}
	half := maxChars / 2
	head := s[:byteIndexOfRune(s, half)]
	tail := s[byteIndexOfRune(s, n-(maxChars-half)):]
	return head + gapNote(n-maxChars) + tail
}

// byteIndexOfRune is the byte offset of s's n-th character (len(s) past
// the end).
func byteIndexOfRune(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}
