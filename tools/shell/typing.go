package shell

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// What write_stdin types reaches a terminal, and a shell reading it runs
// a command only once Enter ends it, after the terminal (or the shell's
// line editor) has applied the editing keys typed before. A risky line
// typed in pieces, or with a key erased, is risky all the same, so the
// approval gate reads the command as the shell assembles it: per session,
// what was typed and not yet run is kept across write_stdin calls, edited
// as the terminal edits it, and each call classifies the commands its keys
// complete together with the unfinished rest (the next call may only
// press Enter).

// maxTyped bounds what a session may have typed and not run.
const maxTyped = 64 << 10

// riskKeys is the reason given when the typed line holds keys the model
// cannot follow.
const riskKeys = "typed keys the classifier cannot follow"

// typing is what has been typed into a session's terminal and not run yet.
// The zero value is an empty line. Its fields are never changed in place
// (a copy is a snapshot), so a write that fails leaves the state before it.
type typing struct {
	// text is the command being typed, edited as the terminal would. The
	// lines a shell has read but holds for more (an open quote, a trailing
	// backslash or pipe, a here-document's body) end in "\n".
	text string
	// lineAt is where the line being edited starts in text: the keys that
	// erase stop there, the shell has read what comes before.
	lineAt int
	// lines is what the shell made of text[:lineAt].
	lines shellLines
	// unsure: text went through keys the model cannot follow (completion,
	// cursor moves, history, Meta keys, a non-ASCII character erased), so
	// every write asks until Enter or Ctrl-C ends the command.
	unsure bool
	// quoteNext: the last key was Ctrl-V; the next one is taken as is.
	quoteNext bool
	// unread: text was not classified as it stands (a write stopped part
	// way), so Enter alone must not run it unread.
	unread bool
}

// typed is what some keys do to a session's shell.
type typed struct {
	// run is what the keys make new: each command they complete, ending
	// in "\n", then the unfinished rest. A command classified already that
	// the keys only end with Enter is left out.
	run string
	// unsure: run holds keys the model cannot follow.
	unsure bool
}

// typeKeys returns the state after keys are typed, and what they make.
// The keys modelled are those a terminal in canonical mode and a shell's
// line editor agree on: Enter (\n, \r), Ctrl-C (drops the command), Ctrl-U
// (kills the line), backspace (\x7f, \b) and Ctrl-V (quotes the next key).
// Taken literally, as a terminal may take \b, the byte stays inside a word,
// where it names no program and no path. Any other control key and any
// non-ASCII byte (a line editor in a C locale reads those as Meta keys)
// leaves the line unsure.
func (t typing) typeKeys(keys string) (typing, typed) {
	var (
		out  typed
		run  strings.Builder
		text = []byte(t.text)
	)
	// A first Enter only ends a command classified as it stands.
	carried := len(text) > 0 && !t.unsure && !t.unread && !t.quoteNext
	for i := 0; i < len(keys); i++ {
		k := keys[i]
		if t.quoteNext {
			t.quoteNext = false
			text = append(text, k)
			continue
		}
		switch {
		case k == '\n' || k == '\r':
			if t.lines.read(string(text[t.lineAt:])) {
				text = append(text, '\n')
				t.lineAt = len(text)
				break
			}
			if !carried || i > 0 {
				run.Write(text)
				run.WriteByte('\n')
				out.unsure = out.unsure || t.unsure
			}
			text, t.lineAt, t.lines, t.unsure = text[:0], 0, shellLines{}, false
		case k == 0x03: // Ctrl-C
			text, t.lineAt, t.lines, t.unsure = text[:0], 0, shellLines{}, false
		case k == 0x15: // Ctrl-U
			text = text[:t.lineAt]
		case k == 0x7f || k == '\b':
			if n := len(text); n > t.lineAt {
				// A terminal erases a byte, a line editor a character.
				t.unsure = t.unsure || text[n-1] >= 0x80
				text = text[:n-1]
			}
		case k == 0x16: // Ctrl-V
			t.quoteNext, t.unsure = true, true
		case k == 0x04: // Ctrl-D: end of file on an empty line, else the line is sent unfinished
			t.unsure = t.unsure || len(text) > t.lineAt
		case k < 0x20 || k >= 0x7f:
			t.unsure = true
			text = append(text, k)
		default:
			text = append(text, k)
		}
	}
	t.text = string(text)
	run.WriteString(t.text)
	out.run = run.String()
	out.unsure = out.unsure || t.unsure
	return t, out
}

// shellLines follows a shell reading a command line by line, to tell
// whether it waits for more lines: a quote or a substitution is open, the
// line ends in a backslash, a pipe, && or ||, or a here-document's body
// has not ended. The typed text is classified whole and line by line
// (typedRisks), so a wrong answer here asks more, never less. The zero
// value has read nothing; read never changes what a copy shares.
type shellLines struct {
	open   string    // quotes and substitutions open, innermost last: ' " ` $ (for $'…) ( {
	bodies []heredoc // here-documents whose bodies are being read, the first one now
	last   [2]byte   // the last two characters outside quotes and comments
}

// heredoc is a here-document waiting for its body.
type heredoc struct {
	delim string
	strip bool // <<-: leading tabs are stripped from its lines
}

// read takes the next line (without its newline) and reports whether the
// command goes on.
func (s *shellLines) read(line string) bool {
	if len(s.bodies) > 0 {
		body := line
		if s.bodies[0].strip {
			body = strings.TrimLeft(body, "\t")
		}
		if body == s.bodies[0].delim {
			s.bodies = s.bodies[1:]
		}
		return len(s.bodies) > 0 || s.waits()
	}
	var declared []heredoc
	inWord := false // a # starts a comment only outside a word
	next := func(i int) byte {
		if i+1 < len(line) {
			return line[i+1]
		}
		return 0
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		top := byte(0)
		if s.open != "" {
			top = s.open[len(s.open)-1]
		}
		switch top {
		case '\'':
			if c == '\'' {
				s.open = s.open[:len(s.open)-1]
			}
			continue
		case '$', '`', '"': // $'…', `…` and "…": a backslash quotes the next character
			closer := top
			if top == '$' {
				closer = '\''
			}
			switch {
			case c == '\\':
				i++
			case c == closer:
				s.open = s.open[:len(s.open)-1]
			case top != '"': // nothing else opens inside $'…' or `…`
			case c == '`':
				s.open += "`"
			case c == '$' && (next(i) == '(' || next(i) == '{'):
				i++
				s.open += line[i : i+1]
			}
			continue
		}
		// Outside quotes: at the top, or inside $( ) or ${ }.
		switch {
		case c == '\\':
			if i+1 == len(line) {
				return true
			}
			i++
			inWord = true
		case c == '\'' || c == '"' || c == '`':
			s.open += string(c)
			inWord = true
		case c == '$' && next(i) == '\'':
			s.open += "$"
			i++
			inWord = true
		case c == '$' && (next(i) == '(' || next(i) == '{'):
			i++
			s.open += line[i : i+1]
			inWord = true
		case c == '(':
			s.open += "("
			inWord = false
		case c == ')' && top == '(', c == '}' && top == '{':
			s.open = s.open[:len(s.open)-1]
			inWord = true
		case c == '#' && !inWord:
			i = len(line)
			continue
		case c == '<' && next(i) == '<' && !strings.HasPrefix(line[i:], "<<<"):
			h, end := readHeredoc(line, i+2)
			if h.delim != "" {
				declared = append(declared, h)
			}
			i = end - 1
			inWord = false
		case c == ' ' || c == '\t':
			inWord = false
			continue
		case strings.IndexByte(";&|<>", c) >= 0:
			inWord = false
		default:
			inWord = true
		}
		s.last = [2]byte{s.last[1], c}
	}
	if len(declared) > 0 {
		s.bodies = declared
		return true
	}
	return s.waits()
}

// waits reports whether what was read so far is unfinished.
func (s *shellLines) waits() bool {
	return s.open != "" || s.last[1] == '|' || s.last[1] == '&' && (s.last[0] == '&' || s.last[0] == '|')
}

// readHeredoc reads the delimiter after "<<" at i (quotes removed) and
// returns it with the index after it.
func readHeredoc(line string, i int) (heredoc, int) {
	var h heredoc
	if i < len(line) && line[i] == '-' {
		h.strip = true
		i++
	}
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	var b strings.Builder
	for ; i < len(line) && strings.IndexByte(" \t;&|<>()", line[i]) < 0; i++ {
		if c := line[i]; c != '\'' && c != '"' && c != '\\' {
			b.WriteByte(c)
		}
	}
	h.delim = b.String()
	return h, i
}

// typedRisks is risks for text typed into a shell, read whole and line by
// line: where a command ends is a reading that may be wrong either way (a
// quote the shell holds open across lines, or one it does not), and the
// union errs toward asking.
func typedRisks(text, dir, workspace string) []string {
	out := risks(text, parse(text), dir, workspace)
	if !strings.Contains(strings.TrimRight(text, "\n"), "\n") {
		return out
	}
	for _, line := range strings.Split(text, "\n") {
		for _, r := range risks(line, parse(line), dir, workspace) {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// shown is typed text as the owner reads it in a request: without the
// final Enter, and with the keys that do not print written as \xNN (a line
// with nothing else is "(Enter)").
func shown(text string) string {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return "(Enter)"
	}
	var b strings.Builder
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if r == '\n' || r != utf8.RuneError && unicode.IsPrint(r) {
			b.WriteString(text[i : i+size])
		} else {
			for _, c := range []byte(text[i : i+size]) {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		}
		i += size
	}
	return b.String()
}
