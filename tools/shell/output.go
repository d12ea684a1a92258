package shell

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// capture is an io.Writer that keeps the first and last limit bytes of a
// stream and counts the characters dropped in between, so a command that
// prints gigabytes costs bounded memory.
type capture struct {
	mu      sync.Mutex
	limit   int
	head    []byte
	tail    []byte
	dropped int // characters between head and tail
}

func newCapture(limit int) *capture { return &capture{limit: limit} }

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if room := c.limit - len(c.head); room > 0 {
		take := min(room, len(p))
		c.head = append(c.head, p[:take]...)
		p = p[take:]
	}
	if len(p) == 0 {
		return n, nil
	}
	c.tail = append(c.tail, p...)
	if over := len(c.tail) - c.limit; over > 0 {
		c.dropped += utf8.RuneCount(c.tail[:over])
		c.tail = append(c.tail[:0], c.tail[over:]...)
	}
	return n, nil
}

// piece is text, or a gap of dropped characters.
type piece struct {
	text string
	gap  int
}

func (c *capture) pieces() []piece {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []piece{{text: strings.ToValidUTF8(string(c.head), "\uFFFD")}}
	if c.dropped > 0 {
		out = append(out, piece{gap: c.dropped})
	}
	if len(c.tail) > 0 {
		out = append(out, piece{text: strings.ToValidUTF8(string(c.tail), "\uFFFD")})
	}
	return out
}

func (c *capture) empty() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.head) == 0
}

// render labels stdout and stderr, then keeps the first and last max
// characters of the whole and says how many were cut in between.
func render(stdout, stderr *capture, maxChars int) string {
	var doc []piece
	if !stdout.empty() {
		doc = append(doc, piece{text: "STDOUT:\n"})
		doc = append(doc, stdout.pieces()...)
	}
	if !stderr.empty() {
		if len(doc) > 0 {
			doc = append(doc, piece{text: "\n"})
		}
		doc = append(doc, piece{text: "STDERR:\n"})
		doc = append(doc, stderr.pieces()...)
	}
	if len(doc) == 0 {
		return "(no output)"
	}
	return truncate(doc, maxChars)
}

func truncate(doc []piece, maxChars int) string {
	total, gaps := 0, false
	for _, p := range doc {
		total += utf8.RuneCountInString(p.text) + p.gap
		gaps = gaps || p.gap > 0
	}
	if !gaps && total <= 2*maxChars {
		var sb strings.Builder
		for _, p := range doc {
			sb.WriteString(p.text)
		}
		return strings.TrimRight(sb.String(), "\n")
	}
	// The captures keep at least maxChars characters on each side of a
	// gap, so the head and tail below never reach into one.
	head := firstRunes(doc, maxChars)
	tail := lastRunes(doc, maxChars)
	cut := total - 2*maxChars
	return fmt.Sprintf("%s\n\n... [%d characters truncated] ...\n\n%s", head, cut, strings.TrimRight(tail, "\n"))
}

func firstRunes(doc []piece, n int) string {
	var sb strings.Builder
	for _, p := range doc {
		for _, r := range p.text {
			if n == 0 {
				return sb.String()
			}
			sb.WriteRune(r)
			n--
		}
		if p.gap > 0 {
			return sb.String()
		}
	}
	return sb.String()
}

func lastRunes(doc []piece, n int) string {
	var parts []string
	for i := len(doc) - 1; i >= 0 && n > 0; i-- {
		p := doc[i]
		if p.gap > 0 {
			break
		}
		rs := []rune(p.text)
		if len(rs) > n {
			rs = rs[len(rs)-n:]
		}
		n -= len(rs)
		parts = append(parts, string(rs))
	}
	var sb strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		sb.WriteString(parts[i])
	}
	return sb.String()
}
