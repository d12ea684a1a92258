package shell

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// rule is one built-in guard: a reason shown to the model and a check over
// one parsed command.
type rule struct {
	reason string
	match  func(c simpleCmd) bool
}

// builtinRules refuse commands that destroy the machine rather than the
// task: wiping / or the home folder, formatting disks, writing raw devices,
// powering off, fork bombs, making the whole system world-writable.
var builtinRules = []rule{
	{"recursive deletion of /, the home folder or a system folder", func(c simpleCmd) bool {
		if c.name() != "rm" {
			return false
		}
		args := c.args()
		for _, a := range args {
			if a == "--no-preserve-root" {
				return true
			}
		}
		return hasRecursiveFlag(args) && anyCritical(args)
	}},
	{"recursive permission or owner change of /, the home folder or a system folder", func(c simpleCmd) bool {
		switch c.name() {
		case "chmod", "chown", "chgrp":
			args := c.args()
			return hasRecursiveFlag(args) && anyCritical(args)
		}
		return false
	}},
	{"moving /, the home folder or a system folder away", func(c simpleCmd) bool {
		return c.name() == "mv" && anyCritical(c.args())
	}},
	{"deleting files across /, the home folder or a system folder with find", func(c simpleCmd) bool {
		if c.name() != "find" {
			return false
		}
		args := c.args()
		deletes := false
		for i, a := range args {
			if a == "-delete" || (a == "-exec" || a == "-execdir") && i+1 < len(args) && (args[i+1] == "rm" || strings.HasSuffix(args[i+1], "/rm")) {
				deletes = true
			}
		}
		return deletes && len(args) > 0 && isCritical(args[0])
	}},
	{"creating or wiping a file system or partition table (mkfs, wipefs, format, ...)", func(c simpleCmd) bool {
		name := c.name()
		switch name {
		case "mke2fs", "mkswap", "wipefs", "mkntfs", "mkdosfs", "diskpart", "format", "sfdisk", "sgdisk":
			return true
		}
		return name == "mkfs" || strings.HasPrefix(name, "mkfs.")
	}},
	{"writing to a raw disk or memory device", func(c simpleCmd) bool {
		for _, w := range c.words {
			if w.redirect != "" && strings.Contains(w.redirect, ">") && isRawDevice(w.text) {
				return true
			}
		}
		switch c.name() {
		case "dd":
			for _, a := range c.args() {
				if target, ok := strings.CutPrefix(a, "of="); ok && strings.HasPrefix(target, "/dev/") && !isHarmlessDevice(target) {
					return true
				}
			}
		case "tee", "cp", "shred", "wipe", "badblocks", "blkdiscard":
			for _, a := range c.args() {
				if isRawDevice(a) {
					return true
				}
			}
		}
		return false
	}},
	{"shutting down, rebooting or halting the machine", func(c simpleCmd) bool {
		args := c.args()
		switch c.name() {
		case "shutdown", "reboot", "poweroff", "halt":
			return true
		case "init", "telinit":
			return len(args) > 0 && (args[0] == "0" || args[0] == "6")
		case "systemctl":
			for _, a := range args {
				switch a {
				case "poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "emergency", "rescue", "soft-reboot":
					return true
				}
			}
		}
		return false
	}},
	{"killing every process on the machine", func(c simpleCmd) bool {
		switch c.name() {
		case "killall5":
			return true
		case "kill":
			args := c.args()
			return len(args) >= 2 && args[len(args)-1] == "-1"
		}
		return false
	}},
}

// hasRecursiveFlag reports -r, -R, --recursive or a combined short flag
// holding r/R (-rf, -fR).
func hasRecursiveFlag(args []string) bool {
	for _, a := range args {
		if a == "--recursive" {
			return true
		}
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "rR") {
			return true
		}
	}
	return false
}

func anyCritical(args []string) bool {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && isCritical(a) {
			return true
		}
	}
	return false
}

// systemDirs are the top-level folders whose loss breaks the machine.
var systemDirs = map[string]bool{
	"bin": true, "boot": true, "dev": true, "etc": true, "home": true, "lib": true, "lib32": true, "lib64": true,
	"opt": true, "proc": true, "root": true, "run": true, "sbin": true, "srv": true, "sys": true, "usr": true, "var": true,
	"Users": true, "System": true, "Library": true, "Applications": true,
}

// isCritical reports whether target is /, the home folder, a system folder
// or a glob over one of them.
func isCritical(target string) bool {
	t := strings.TrimSpace(target)
	for _, home := range []string{"$HOME", "${HOME}", "~"} {
		if rest, ok := strings.CutPrefix(t, home); ok && (rest == "" || rest == "/" || rest == "/*" || rest == "/." || rest == "/.*") {
			return true
		}
	}
	if !strings.HasPrefix(t, "/") {
		return false
	}
	t = strings.TrimSuffix(t, "/*")
	t = strings.TrimSuffix(t, "/.")
	if strings.Trim(t, "/.*") == "" {
		return true // "/", "//", "/*", "/.", "/.*"
	}
	clean := path.Clean(t)
	return strings.Count(clean, "/") == 1 && systemDirs[clean[1:]]
}

var rawDevice = regexp.MustCompile(`^/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme[0-9]|mmcblk[0-9]|disk[0-9]|rdisk[0-9]|md[0-9]|dm-[0-9]|mapper/|loop[0-9]|nbd[0-9]|sr[0-9]|mem$|kmem$|port$)`)

func isRawDevice(p string) bool {
	return rawDevice.MatchString(p) || p == "/proc/sysrq-trigger"
}

func isHarmlessDevice(p string) bool {
	switch p {
	case "/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/full":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/")
}

var funcDef = regexp.MustCompile(`([^\s(){};|&<>]+)\s*\(\)\s*\{([^}]*)\}`)

// isForkBomb spots a function that pipes into itself in the background,
// the shape of ":(){ :|:& };:" under any name.
func isForkBomb(raw string) bool {
	for _, m := range funcDef.FindAllStringSubmatch(raw, -1) {
		name, body := m[1], strings.Join(strings.Fields(m[2]), "")
		if strings.Contains(body, name+"|"+name) && strings.Contains(body, "&") {
			return true
		}
	}
	return false
}

// guard decides whether a command may run at all.
type guard struct {
	deny  []*regexp.Regexp
	allow []*regexp.Regexp
}

func newGuard(deny, allow []string) (*guard, error) {
	g := &guard{}
	for i, p := range deny {
		re, err := regexp.Compile("(?i)" + p)
		if err != nil {
			return nil, fmt.Errorf("shell: denyPatterns[%d] %q: %w", i, p, err)
		}
		g.deny = append(g.deny, re)
	}
	for i, p := range allow {
		re, err := regexp.Compile("(?i)" + p)
		if err != nil {
			return nil, fmt.Errorf("shell: allowPatterns[%d] %q: %w", i, p, err)
		}
		g.allow = append(g.allow, re)
	}
	return g, nil
}

// check returns why the command is refused, or "" to let it run. An allow
// pattern matching the command overrides every deny (built-in or user).
func (g *guard) check(raw string, cmds []simpleCmd) string {
	for _, re := range g.allow {
		if re.MatchString(raw) {
			return ""
		}
	}
	for _, re := range g.deny {
		if re.MatchString(raw) {
			return fmt.Sprintf("it matches the configured deny pattern %q", re.String()[len("(?i)"):])
		}
	}
	if isForkBomb(raw) {
		return "a fork bomb"
	}
	for _, c := range cmds {
		for _, r := range builtinRules {
			if r.match(c) {
				return r.reason
			}
		}
	}
	return ""
}
