package shell

import (
	"strings"
	"unicode/utf8"
)

// terminalText turns what a program writes to a terminal into plain text
// for the model, one chunk at a time: escape sequences (colours, cursor
// moves, titles) are removed, CR LF becomes LF and a lone CR (a progress
// bar redrawing its line) a line break, other control characters but tab
// are dropped, and bytes that are not UTF-8 become U+FFFD. A sequence or a
// character split across two reads is held until the next. It keeps state
// between calls and is used by one goroutine.
type terminalText struct {
	state   escState
	pending []byte // an incomplete UTF-8 character from the last chunk
	cr      bool   // the last chunk ended in a CR
}

type escState uint8

const (
	ground  escState = iota
	esc              // after ESC
	escMid           // after ESC and an intermediate byte
	csi              // ESC [ ... until a final byte
	command          // OSC, DCS, APC, PM, SOS: until BEL or ESC \
	cmdEsc           // ESC inside such a string
)

// write takes the next chunk and returns the text it completes.
func (t *terminalText) write(p []byte) string {
	out := make([]byte, 0, len(t.pending)+len(p))
	out = append(out, t.pending...)
	t.pending = t.pending[:0]
	for _, b := range p {
		switch t.state {
		case esc:
			switch {
			case b == '[':
				t.state = csi
			case b == ']' || b == 'P' || b == '_' || b == '^' || b == 'X':
				t.state = command
			case b >= 0x20 && b <= 0x2f:
				t.state = escMid
			default:
				t.state = ground
			}
			continue
		case escMid:
			if b < 0x20 || b > 0x2f {
				t.state = ground
			}
			continue
		case csi:
			if b >= 0x40 && b <= 0x7e {
				t.state = ground
			}
			continue
		case command:
			switch b {
			case 0x07:
				t.state = ground
			case 0x1b:
				t.state = cmdEsc
			}
			continue
		case cmdEsc:
			if b == '\\' {
				t.state = ground
			} else {
				t.state = command
			}
			continue
		}
		// ground
		if t.cr && b != '\n' {
			out = append(out, '\n')
		}
		t.cr = false
		switch {
		case b == 0x1b:
			t.state = esc
		case b == '\r':
			t.cr = true
		case b == '\n' || b == '\t' || b >= 0x20 && b != 0x7f:
			out = append(out, b)
		}
	}
	// Hold a character cut by the end of the chunk.
	if i := incompleteTail(out); i < len(out) {
		t.pending = append(t.pending, out[i:]...)
		out = out[:i]
	}
	return strings.ToValidUTF8(string(out), "\uFFFD")
}

// flush returns what is held at the end of the stream.
func (t *terminalText) flush() string {
	s := strings.ToValidUTF8(string(t.pending), "\uFFFD")
	if t.cr {
		s += "\n"
	}
	t.pending, t.cr, t.state = t.pending[:0], false, ground
	return s
}

// incompleteTail returns where a UTF-8 character that b's end cuts short
// begins, or len(b).
func incompleteTail(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if !utf8.RuneStart(b[i]) {
			continue
		}
		if !utf8.FullRune(b[i:]) {
			return i
		}
		break
	}
	return len(b)
}
