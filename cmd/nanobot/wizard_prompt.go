package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/chzyer/readline"
)

// prompter asks the wizard's questions: on a terminal with hidden input
// for secrets, otherwise (a pipe, a script, a test) line by line from the
// input, so the wizard can be driven without a terminal.
type prompter struct {
	in   *bufio.Reader
	out  io.Writer
	tty  bool
	eof  bool
	seen int // questions asked, for messages
}

func newPrompter(in io.Reader, out io.Writer) *prompter {
	tty := false
	if f, ok := in.(*os.File); ok {
		tty = readline.IsTerminal(int(f.Fd()))
	}
	return &prompter{in: bufio.NewReader(in), out: out, tty: tty}
}

// ask shows label with its default and returns the answer (the default for
// an empty line or the end of the input).
func (p *prompter) ask(label, def string) string {
	p.seen++
	if def != "" {
		fmt.Fprintf(p.out, "%s [%s]: ", label, def)
	} else {
		fmt.Fprintf(p.out, "%s: ", label)
	}
	line := p.line()
	if line == "" {
		return def
	}
	return line
}

// secret asks for a secret without echoing it on a terminal; shown is what
// the default looks like ("set", "${VAR}") and keep is returned for an
// empty answer.
func (p *prompter) secret(label, shown, keep string) string {
	p.seen++
	prompt := label + ": "
	if shown != "" {
		prompt = fmt.Sprintf("%s [%s, Enter keeps it]: ", label, shown)
	}
	if p.tty {
		b, err := readline.Password(prompt)
		if err == nil {
			if s := strings.TrimSpace(string(b)); s != "" {
				return s
			}
			return keep
		}
	}
	fmt.Fprint(p.out, prompt)
	if s := p.line(); s != "" {
		return s
	}
	return keep
}

// yes asks a yes/no question.
func (p *prompter) yes(label string, def bool) bool {
	d := "y/N"
	if def {
		d = "Y/n"
	}
	switch strings.ToLower(p.ask(label+" ("+d+")", "")) {
	case "y", "yes":
		return true
	case "n", "no":
		return false
	}
	return def
}

func (p *prompter) line() string {
	if p.eof {
		fmt.Fprintln(p.out)
		return ""
	}
	s, err := p.in.ReadString('\n')
	if err != nil {
		p.eof = true
		if !p.tty {
			fmt.Fprintln(p.out)
		}
	}
	return strings.TrimSpace(s)
}
