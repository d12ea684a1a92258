package shell

import (
	"path/filepath"
	"slices"
	"strings"
)

// This is a best-effort reading of a shell command line, good enough for
// the guards to see which programs run with which arguments. It is not a
// shell parser and not a security boundary: it over-approximates (text in
// command substitutions is read as commands even inside single quotes) so
// that obvious tricks are caught, and kernel confinement is tools/sandbox's
// job.

// word is one argument after quote removal.
type word struct {
	text string
	// redirect is the operator (">", ">>", "<", "&>", ...) when the word is
	// the target of a redirection.
	redirect string
}

// simpleCmd is one program invocation: "FOO=1 sudo rm -rf x > log".
type simpleCmd struct {
	assigns []string // leading NAME=value words
	words   []word   // program and arguments (redirect targets included)
}

// name is the program as invoked, without its folder.
func (c simpleCmd) name() string {
	for _, w := range c.words {
		if w.redirect == "" {
			return filepath.Base(w.text)
		}
	}
	return ""
}

// args are the non-redirect words after the program.
func (c simpleCmd) args() []string {
	var out []string
	seenName := false
	for _, w := range c.words {
		if w.redirect != "" {
			continue
		}
		if !seenName {
			seenName = true
			continue
		}
		out = append(out, w.text)
	}
	return out
}

// maxNesting bounds recursion into "sh -c", eval and substitutions.
const maxNesting = 4

// parse splits a command line into simple commands, unwrapping wrappers
// (sudo, env, nohup, xargs, ...), "sh -c" / "bash -c" scripts, eval and
// command substitutions.
func parse(line string) []simpleCmd {
	var out []simpleCmd
	parseInto(line, 0, &out)
	return out
}

func parseInto(line string, depth int, out *[]simpleCmd) {
	if depth > maxNesting {
		return
	}
	for _, inner := range substitutions(line) {
		parseInto(inner, depth+1, out)
	}
	for _, c := range lex(line) {
		addCmd(c, depth, out)
	}
}

// addCmd appends c without its wrappers, and the commands it runs.
func addCmd(c simpleCmd, depth int, out *[]simpleCmd) {
	c = unwrap(c)
	if len(c.words) == 0 {
		if len(c.assigns) > 0 {
			*out = append(*out, c)
		}
		return
	}
	*out = append(*out, c)
	name := c.name()
	args := c.args()
	switch {
	case isShell(name):
		if script, ok := shellScript(args); ok {
			parseInto(script, depth+1, out)
		}
	case name == "eval":
		parseInto(strings.Join(args, " "), depth+1, out)
	case name == "find" && depth < maxNesting:
		for _, inner := range findCommands(args) {
			addCmd(inner, depth+1, out)
		}
	}
}

// findCommands are the commands find runs with -exec, -execdir, -ok and
// -okdir, up to ";" (or "{} +"). "{}" stands for what find finds, so it is
// read as find's starting points: "find / -exec rm {} +" deletes under /.
func findCommands(args []string) []simpleCmd {
	first := 0 // after the options that come before the starting points
	for first < len(args) {
		if a := args[first]; a == "-H" || a == "-L" || a == "-P" || strings.HasPrefix(a, "-O") {
			first++
		} else if a == "-D" {
			first += 2
		} else {
			break
		}
	}
	starts := []string{"."}
	if first < len(args) {
		rest := args[first:]
		n := slices.IndexFunc(rest, func(a string) bool { return strings.HasPrefix(a, "-") || a == "(" || a == "!" })
		if n < 0 {
			n = len(rest)
		}
		if n > 0 {
			starts = rest[:n]
		}
	}
	var out []simpleCmd
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		var c simpleCmd
		for i++; i < len(args) && args[i] != ";" && !(args[i] == "+" && args[i-1] == "{}"); i++ {
			if !strings.Contains(args[i], "{}") {
				c.words = append(c.words, word{text: args[i]})
				continue
			}
			for _, s := range starts {
				c.words = append(c.words, word{text: strings.ReplaceAll(args[i], "{}", s)})
			}
		}
		out = append(out, c)
	}
	return out
}

func isShell(name string) bool {
	switch name {
	case "sh", "bash", "dash", "zsh", "ksh", "ash", "fish", "busybox":
		return true
	}
	return false
}

// shellScript finds the script of "sh -c SCRIPT" (also -ec, -lc, ...).
func shellScript(args []string) (string, bool) {
	for i, a := range args {
		if a == "sh" || a == "ash" { // busybox sh -c
			continue
		}
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c") {
			if i+1 < len(args) {
				return args[i+1], true
			}
			return "", false
		}
		if !strings.HasPrefix(a, "-") {
			return "", false
		}
	}
	return "", false
}

// wrappers run their arguments as a command; the option-taking ones list
// how many following words their options consume.
var wrappers = map[string]map[string]int{
	"sudo":     {"-u": 1, "-g": 1, "-C": 1, "-D": 1, "-h": 1, "-p": 1, "-r": 1, "-t": 1, "-U": 1},
	"doas":     {"-u": 1, "-C": 1},
	"env":      {"-u": 1, "-C": 1, "-S": 0},
	"nohup":    {},
	"nice":     {"-n": 1},
	"ionice":   {"-c": 1, "-n": 1, "-p": 1},
	"time":     {"-f": 1, "-o": 1},
	"command":  {},
	"builtin":  {},
	"exec":     {"-a": 1},
	"xargs":    {"-a": 1, "-d": 1, "-E": 1, "-I": 1, "-L": 1, "-n": 1, "-P": 1, "-s": 1},
	"timeout":  {"-k": 1, "-s": 1},
	"stdbuf":   {"-i": 1, "-o": 1, "-e": 1},
	"setsid":   {},
	"chronic":  {},
	"unbuffer": {},
	"watch":    {"-n": 1, "--interval": 1},
	"then":     {}, "do": {}, "else": {}, "elif": {}, "if": {}, "while": {}, "until": {}, "!": {}, "{": {},
}

// unwrap drops wrapper programs so the command that really runs comes
// first: "sudo -u x env A=1 rm -rf /" -> "rm -rf /".
func unwrap(c simpleCmd) simpleCmd {
	for range 8 {
		if len(c.words) == 0 || c.words[0].redirect != "" {
			return c
		}
		name := filepath.Base(c.words[0].text)
		opts, ok := wrappers[name]
		if !ok {
			return c
		}
		rest := c.words[1:]
		for len(rest) > 0 && rest[0].redirect == "" {
			w := rest[0].text
			if name == "env" && (w == "-S" || w == "--split-string") && len(rest) > 1 {
				// env -S 'curl x': the string is split into the command.
				if split := parse(rest[1].text); len(split) > 0 {
					rest = append(slices.Clone(split[0].words), rest[2:]...)
				} else {
					rest = rest[2:]
				}
				break
			}
			if n, takes := opts[w]; takes {
				rest = rest[min(1+n, len(rest)):]
				continue
			}
			if strings.HasPrefix(w, "-") && w != "-" {
				rest = rest[1:]
				continue
			}
			if name == "env" && isAssignment(w) {
				c.assigns = append(c.assigns, w)
				rest = rest[1:]
				continue
			}
			if name == "timeout" && len(w) > 0 && (w[0] >= '0' && w[0] <= '9') {
				rest = rest[1:] // the duration
				continue
			}
			break
		}
		c.words = rest
	}
	return c
}

func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for i, r := range name {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// substitutions returns the text inside $(...) and `...` anywhere in line.
func substitutions(line string) []string {
	var out []string
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '$' && i+1 < len(line) && line[i+1] == '(':
			level, j := 1, i+2
			for ; j < len(line) && level > 0; j++ {
				switch line[j] {
				case '(':
					level++
				case ')':
					level--
				}
			}
			end := j
			if level == 0 {
				end = j - 1
			}
			out = append(out, line[i+2:end])
			i = j - 1
		case line[i] == '`':
			j := strings.IndexByte(line[i+1:], '`')
			if j < 0 {
				out = append(out, line[i+1:])
				return out
			}
			out = append(out, line[i+1:i+1+j])
			i += j + 1
		}
	}
	return out
}

// lex splits line into simple commands at ; & && | || newlines and
// parentheses, removing quotes and recording redirections. Here-document
// bodies are skipped (they are data, not commands).
func lex(line string) []simpleCmd {
	var (
		cmds     []simpleCmd
		cur      simpleCmd
		buf      strings.Builder
		inWord   bool
		redirect string
		heredocs []string
	)
	flushWord := func() {
		if !inWord {
			return
		}
		text := buf.String()
		buf.Reset()
		inWord = false
		switch {
		case redirect == "<<" || redirect == "<<-":
			heredocs = append(heredocs, text)
		case redirect != "":
			cur.words = append(cur.words, word{text: text, redirect: redirect})
		case len(cur.words) == 0 && isAssignment(text):
			cur.assigns = append(cur.assigns, text)
		default:
			cur.words = append(cur.words, word{text: text})
		}
		redirect = ""
	}
	flushCmd := func() {
		flushWord()
		if len(cur.words) > 0 || len(cur.assigns) > 0 {
			cmds = append(cmds, cur)
		}
		cur = simpleCmd{}
	}
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == '\'':
			inWord = true
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				buf.WriteString(line[i+1:])
				i = len(line)
				break
			}
			buf.WriteString(line[i+1 : i+1+j])
			i += j + 1
		case ch == '$' && i+1 < len(line) && line[i+1] == '\'':
			// $'…' (ANSI-C quoting): a backslash escapes, \' included.
			inWord = true
			j := i + 2
			for ; j < len(line) && line[j] != '\''; j++ {
				if line[j] == '\\' && j+1 < len(line) {
					j++
				}
				buf.WriteByte(line[j])
			}
			i = j
		case ch == '"':
			inWord = true
			j := i + 1
			for ; j < len(line) && line[j] != '"'; j++ {
				if line[j] == '\\' && j+1 < len(line) && strings.IndexByte("\"\\$`\n", line[j+1]) >= 0 {
					j++
				}
				buf.WriteByte(line[j])
			}
			i = j
		case ch == '\\' && i+1 < len(line):
			if line[i+1] != '\n' {
				inWord = true
				buf.WriteByte(line[i+1])
			}
			i++
		case ch == '#' && !inWord:
			for i < len(line) && line[i] != '\n' {
				i++
			}
			i--
		case ch == ' ' || ch == '\t':
			flushWord()
		case ch == '\n':
			flushCmd()
			if len(heredocs) > 0 {
				i = skipHeredocs(line, i+1, heredocs) - 1
				heredocs = nil
			}
		case ch == ';' || ch == '&' || ch == '|' || ch == '(' || ch == ')':
			if ch == '&' && i+1 < len(line) && line[i+1] == '>' {
				flushWord()
				i++
				redirect = "&>"
				if i+1 < len(line) && line[i+1] == '>' {
					i++
					redirect = "&>>"
				}
				break
			}
			if ch == '&' && i > 0 && line[i-1] == '>' {
				// ">&2" duplicates a descriptor; the target is not a file.
				buf.WriteByte('&')
				inWord = true
				break
			}
			flushCmd()
		case ch == '>' || ch == '<':
			// "2>" and "2>>": the digits before are the descriptor.
			if inWord && isDigits(buf.String()) {
				buf.Reset()
				inWord = false
			}
			flushWord()
			op := string(ch)
			for i+1 < len(line) && (line[i+1] == '>' || line[i+1] == '<' || line[i+1] == '|') {
				i++
				op += string(line[i])
			}
			if op == "<<" && i+1 < len(line) && line[i+1] == '-' {
				i++
				op = "<<-"
			}
			if op == "<<<" {
				op = "" // here-string: the word is data
			}
			redirect = op
		default:
			inWord = true
			buf.WriteByte(ch)
		}
	}
	flushCmd()
	return cmds
}

func isDigits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

// skipHeredocs returns the index after the bodies of the pending
// here-documents that start at from.
func skipHeredocs(line string, from int, delims []string) int {
	i := from
	for _, d := range delims {
		for i < len(line) {
			end := strings.IndexByte(line[i:], '\n')
			var l string
			if end < 0 {
				l, i = line[i:], len(line)
			} else {
				l, i = line[i:i+end], i+end+1
			}
			if strings.TrimLeft(l, "\t") == d {
				break
			}
		}
	}
	return i
}
