package shell

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nanobot-go/nanobot/tools/internal/pathguard"
)

// confine reports why a command would leave the workspace, or "". It reads
// the parsed commands in order, following cd, and resolves every argument
// that names a path (symlinks included). Programs named by absolute path
// (/usr/bin/python3) may run; paths given to them as arguments may not
// point outside. Like the deny rules this is best effort: tools/sandbox is
// where confinement will be enforced by the kernel.
func confine(g *pathguard.Guard, dir string, cmds []simpleCmd) string {
	words := 0
	for _, c := range cmds {
		words += len(c.words) + len(c.assigns)
	}
	if words > maxCheckedWords {
		return fmt.Sprintf("the command has %d words, more than the %d that can be checked; put it in a script file and run that", words, maxCheckedWords)
	}
	cwd := dir
	for _, c := range cmds {
		for _, a := range c.assigns {
			_, value, _ := strings.Cut(a, "=")
			if why := checkWord(g, cwd, value); why != "" {
				return why
			}
		}
		name := c.name()
		if name == "cd" || name == "pushd" {
			target := g.Home()
			for _, a := range c.args() {
				if !strings.HasPrefix(a, "-") {
					target = a
					break
				}
			}
			if target == "-" {
				continue
			}
			resolved, err := g.ResolveFrom(cwd, expandVars(target, g, cwd))
			if err != nil {
				return fmt.Sprintf("cd %s leaves the workspace (%v)", target, unwrapOutside(err))
			}
			if len(resolved) > maxPathLen {
				return fmt.Sprintf("cd %s: path too long", target)
			}
			cwd = resolved
			continue
		}
		argsAreData := name == "echo" || name == "printf"
		for i, w := range c.words {
			switch {
			case w.redirect != "":
				if strings.HasPrefix(w.text, "&") {
					continue // descriptor duplication such as >&2
				}
			case i == 0 && filepath.IsAbs(w.text):
				continue // running a program by absolute path is fine
			case i == 0 && !strings.Contains(w.text, "/"):
				continue // looked up in PATH
			case argsAreData:
				continue
			}
			if why := checkWord(g, cwd, w.text); why != "" {
				return why
			}
		}
	}
	return ""
}

// Bounds that keep checking linear in the command's length.
const (
	maxCheckedWords = 10_000
	maxPathLen      = 4096
)

// checkWord resolves one argument if it names a path.
func checkWord(g *pathguard.Guard, cwd, w string) string {
	if w == "" || strings.Contains(w, "://") {
		return ""
	}
	if strings.HasPrefix(w, "-") {
		// --file=/etc/passwd
		_, value, ok := strings.Cut(w, "=")
		if !ok {
			return ""
		}
		w = value
	} else if k, value, ok := strings.Cut(w, "="); ok && isAssignment(k+"=") {
		// dd if=/dev/sda, make DESTDIR=/usr
		w = value
	}
	w = expandVars(w, g, cwd)
	if strings.HasPrefix(w, "$") {
		return "" // an unknown variable; cannot be judged here
	}
	if !looksLikePath(w, cwd) || allowedSystemPath(w) {
		return ""
	}
	if _, err := g.ResolveFrom(cwd, w); err != nil {
		var oe *pathguard.OutsideError
		if errors.As(err, &oe) {
			return unwrapOutside(err).Error()
		}
		return fmt.Sprintf("cannot check path %q: %v", w, err)
	}
	return ""
}

// looksLikePath: absolute, home-relative, dotted or slashed words, and bare
// names that exist in the working folder as symlinks (which may point out).
func looksLikePath(w, cwd string) bool {
	if strings.HasPrefix(w, "/") || strings.HasPrefix(w, "~") || strings.HasPrefix(w, ".") || strings.Contains(w, "/") {
		return true
	}
	fi, err := os.Lstat(filepath.Join(cwd, w))
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}

func allowedSystemPath(p string) bool {
	switch p {
	case "/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/full":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/proc/self/fd/")
}

// expandVars substitutes the variables whose value the guard knows.
func expandVars(w string, g *pathguard.Guard, cwd string) string {
	for _, v := range []struct{ name, value string }{
		{"${HOME}", g.Home()}, {"$HOME", g.Home()}, {"${PWD}", cwd}, {"$PWD", cwd},
	} {
		if rest, ok := strings.CutPrefix(w, v.name); ok && (rest == "" || rest[0] == '/') {
			return v.value + rest
		}
	}
	return w
}

// outsideMessage is the model-facing text of an escape attempt.
type outsideMessage struct{ e *pathguard.OutsideError }

func (m outsideMessage) Error() string {
	via := ""
	if m.e.Resolved != m.e.Path {
		via = " (resolves to " + m.e.Resolved + ")"
	}
	return fmt.Sprintf("%q is outside the workspace%s", m.e.Path, via)
}

func unwrapOutside(err error) error {
	var oe *pathguard.OutsideError
	if errors.As(err, &oe) {
		return outsideMessage{oe}
	}
	return err
}
