package shell

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// The risk classifier decides which commands tools.exec.approval "risky"
// asks the owner about. Like the guards it reads the parsed command line
// and errs on the side of asking: a command is risky when it reaches the
// network, installs packages, changes privileges, deletes recursively or
// outside the workspace's scratch space, writes outside the workspace, or
// pipes something into a shell. Everything else (reading, building,
// testing, editing inside the workspace) runs unasked.

// Risk categories, as the owner reads them.
const (
	riskNetwork   = "network access"
	riskInstall   = "installs packages"
	riskPrivilege = "changes privileges or ownership"
	riskDelete    = "deletes outside scratch space"
	riskWrite     = "writes outside the workspace"
	riskPipeShell = "pipes into a shell"
	riskGitRuns   = "sets a git option that runs a command"
)

// networkProgs reach the network whatever their arguments.
var networkProgs = set("curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "scp", "sftp", "ftp", "telnet",
	"rsync", "aria2c", "http", "https", "xh", "lynx", "w3m", "links", "mosh", "nmap", "ping", "gh", "hub",
	"npx", "bunx", "uvx") // the last fetch a package and run it

// gitNetwork are git subcommands that talk to a remote.
var gitNetwork = set("clone", "fetch", "pull", "push", "ls-remote", "submodule", "remote")

// installers map a package manager to the subcommands that install or
// remove.
var installers = map[string]map[string]bool{
	"apt": set("install", "remove", "purge", "upgrade", "dist-upgrade", "full-upgrade", "autoremove"), "apt-get": set("install", "remove", "purge", "upgrade", "dist-upgrade", "autoremove"),
	"dpkg": set("-i", "--install", "-r", "--remove", "-P", "--purge"), "yum": set("install", "remove", "erase", "update", "upgrade"),
	"dnf": set("install", "remove", "erase", "update", "upgrade"), "apk": set("add", "del"), "pacman": set("-S", "-Syu", "-R", "-U"),
	"zypper": set("install", "in", "remove", "rm", "update"), "brew": set("install", "uninstall", "upgrade", "reinstall"),
	"snap": set("install", "remove"), "flatpak": set("install", "uninstall"), "pip": set("install", "uninstall"), "pip3": set("install", "uninstall"),
	"pipx": set("install", "uninstall", "inject", "run"), "npm": set("install", "i", "add", "ci", "uninstall", "update"), "pnpm": set("install", "i", "add", "remove", "update", "dlx"),
	"yarn": set("install", "add", "remove", "upgrade", "global", "dlx"), "bun": set("install", "i", "add", "remove"), "gem": set("install", "uninstall", "update"),
	"cargo": set("install", "uninstall"), "go": set("install", "get"), "uv": set("add", "remove", "sync", "tool", "pip"),
	"conda": set("install", "remove", "update", "create"), "mamba": set("install", "remove", "update", "create"), "composer": set("install", "require", "update"),
}

// privilegeProgs change who may do what.
var privilegeProgs = set("sudo", "su", "doas", "pkexec", "chown", "chgrp", "setcap", "setfacl", "useradd", "usermod", "userdel",
	"groupadd", "groupmod", "passwd", "chpasswd", "visudo", "mount", "umount", "chroot", "unshare", "nsenter", "systemctl", "crontab")

// deleters remove files.
var deleters = set("rm", "rmdir", "unlink", "shred", "srm", "trash", "trash-put")

// copiers write to their last argument; touchers to every one.
var (
	copiers  = set("cp", "mv", "install", "ln", "rsync")
	touchers = set("tee", "truncate", "touch", "mkdir", "chmod")
)

// pipeToShell catches "curl … | sh", "… | sudo bash", "| python -", "| source /dev/stdin".
var pipeToShell = regexp.MustCompile(`\|\s*(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+)?(?:/\S*/)?(?:ba|z|da|k|a|fi)?sh\b|\|\s*(?:python[0-9.]*|perl|ruby|node)\s+-(?:\s|$)|\|\s*source\b|\bsh\s+<\(|\bbash\s+<\(`)

// processSubst finds "<(...)" and ">(...)" (without nesting).
var processSubst = regexp.MustCompile(`[<>]\(([^()]*)\)`)

// risks returns why command (parsed as cmds, running in dir) needs the
// owner's approval, or nil.
func risks(raw string, cmds []simpleCmd, dir, workspace string) []string {
	var out []string
	add := func(r string) {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	if pipeToShell.MatchString(raw) {
		add(riskPipeShell)
	}
	for _, w := range strings.Fields(raw) {
		if privilegeProgs[filepath.Base(w)] && (w == "sudo" || w == "su" || w == "doas" || w == "pkexec") {
			add(riskPrivilege) // unwrap drops these wrappers, so look at the raw words
		}
	}
	scratch := []string{filepath.Join(workspace, ".tmp"), "/tmp", "/var/tmp"}
	for _, m := range processSubst.FindAllStringSubmatch(raw, -1) {
		cmds = append(cmds, parse(m[1])...) // the parser reads $(...) but not <(...)
	}
	for _, c := range cmds {
		name, args := c.name(), c.args()
		switch {
		case networkProgs[name]:
			add(riskNetwork)
		case name == "git" && anyIn(gitNetwork, subcommands(args, gitOptions)):
			add(riskNetwork)
		}
		if name == "git" && setsGitCommand(args) {
			add(riskGitRuns)
		}
		switch {
		case privilegeProgs[name]:
			add(riskPrivilege)
		case name == "chmod" && setsID(args):
			add(riskPrivilege)
		}
		if installs(name, args) {
			add(riskInstall)
			add(riskNetwork)
		}
		if (name == "python" || name == "python3") && slices.Contains(args, "pip") && slices.Contains(args, "install") {
			add(riskInstall)
		}
		if deleters[name] || (name == "find" && slices.Contains(args, "-delete")) || (name == "git" && slices.Contains(subcommands(args, gitOptions), "clean")) {
			// Recursive deletes are asked unless all in scratch space; single
			// files unless in the workspace or scratch space.
			base := workspace
			if hasRecursiveFlag(args) || name == "git" {
				base = ""
			}
			if anyOutside(paths(args), dir, base, scratch) {
				add(riskDelete)
			}
		}
		for _, w := range c.words {
			if (w.redirect == ">" || w.redirect == ">>" || w.redirect == "&>" || w.redirect == ">|") && outside(w.text, dir, workspace, nil) {
				add(riskWrite)
			}
		}
		if writesOutside(name, args, dir, workspace) {
			add(riskWrite)
		}
	}
	return out
}

// setsGitCommand reports a git command line that sets, for this run
// (-c, --config-env) or in a config file (git config KEY VALUE), a setting
// whose value is a command git runs: an alias ("alias.x=!curl …", or one
// naming push), core.sshCommand, a credential helper, a filter and the
// like. What such a command does is not on the line to classify.
func setsGitCommand(args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if takesValue, known := gitOptions[a]; known {
			if takesValue && i+1 < len(args) {
				if (a == "-c" || a == "--config-env") && gitRunsValue(args[i+1]) {
					return true
				}
				i++
			}
			continue
		}
		if strings.HasPrefix(a, "-") {
			if v, ok := strings.CutPrefix(a, "--config-env="); ok && gitRunsValue(v) {
				return true
			}
			if strings.HasPrefix(a, "-c") && !strings.HasPrefix(a, "--") && gitRunsValue(a[2:]) {
				return true
			}
			continue
		}
		if a != "config" {
			return false // another subcommand: what follows is its own
		}
		for _, w := range args[i+1:] {
			if !strings.HasPrefix(w, "-") {
				return gitRunsValue(w) // the key
			}
		}
		return false
	}
	return false
}

// gitRunsValue reports a git setting ("key" or "key=value") whose value
// git runs as a command.
func gitRunsValue(kv string) bool {
	key, _, _ := strings.Cut(strings.ToLower(kv), "=")
	switch key {
	case "core.sshcommand", "core.fsmonitor", "core.pager", "core.editor", "core.hookspath", "core.askpass",
		"credential.helper", "diff.external", "sequence.editor", "gpg.program", "gpg.ssh.program", "gpg.x509.program",
		"uploadpack.packobjectshook", "ssh.variant", "protocol.allow", "protocol.ext.allow", "remote.origin.uploadpack", "remote.origin.receivepack":
		return true
	}
	for _, prefix := range []string{"alias.", "filter.", "pager.", "url.", "include.", "includeif."} {
		if strings.HasPrefix(key, prefix) {
			return true
		}
	}
	for _, suffix := range []string{".command", ".textconv", ".driver", ".helper", ".uploadpack", ".receivepack", ".proxycommand"} {
		if strings.HasSuffix(key, suffix) {
			return true
		}
	}
	return false
}

// gitOptions are git's options before the subcommand: true for those that
// take the next word as their value ("git -C dir push"), false for flags.
var gitOptions = map[string]bool{
	"-C": true, "-c": true, "--git-dir": true, "--work-tree": true, "--namespace": true, "--config-env": true,
	"--attr-source": true, "--shallow-file": true, "--super-prefix": true,
	"-p": false, "--paginate": false, "-P": false, "--no-pager": false, "--bare": false, "--no-replace-objects": false,
	"--no-lazy-fetch": false, "--literal-pathspecs": false, "--no-literal-pathspecs": false, "--glob-pathspecs": false,
	"--noglob-pathspecs": false, "--icase-pathspecs": false, "--no-optional-locks": false, "--no-advice": false,
}

// subcommands are the words of args that may be the subcommand: the first
// word that is neither an option nor the value of one. known lists the
// options read exactly (true: the next word is its value); an option not
// known may or may not take the next word, so that word is a candidate
// and the search goes on after it ("npm --prefix x install",
// "pip -v install"). The reading errs toward finding the subcommand that
// asks. "+toolchain" (cargo) counts as an option.
func subcommands(args []string, known map[string]bool) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch takesValue, isKnown := known[a]; {
		case a == "--":
			if i+1 < len(args) {
				out = append(out, args[i+1])
			}
			return out
		case len(a) < 2 || a[0] != '-' && a[0] != '+':
			return append(out, a)
		case isKnown:
			if takesValue {
				i++
			}
		case strings.Contains(a, "=") || a[0] == '+':
		case i+1 < len(args) && !strings.HasPrefix(args[i+1], "-"):
			out = append(out, args[i+1])
			i++
		}
	}
	return out
}

// installs reports a package manager asked to install or remove.
func installs(name string, args []string) bool {
	subs := installers[name]
	if subs == nil {
		return false
	}
	if anyIn(subs, subcommands(args, nil)) {
		return true
	}
	// dpkg and pacman take what to do as an option: "dpkg -i", "pacman -Syu".
	for _, a := range args {
		if strings.HasPrefix(a, "-") && (subs[a] || name == "pacman" && len(a) > 2 && a[1] != '-' && subs[a[:2]]) {
			return true
		}
	}
	return false
}

func anyIn(set map[string]bool, words []string) bool {
	return slices.ContainsFunc(words, func(w string) bool { return set[w] })
}

// setsID reports a chmod that sets the setuid or setgid bit.
func setsID(args []string) bool {
	for _, a := range args {
		if strings.Contains(a, "+s") || (len(a) == 4 && strings.Trim(a, "01234567") == "" && a[0] != '0') {
			return true
		}
	}
	return false
}

// writesOutside reports a copy, move, tee, touch, dd or in-place sed whose
// destination is outside the workspace.
func writesOutside(name string, args []string, dir, workspace string) bool {
	ps := paths(args)
	switch {
	case copiers[name] && len(ps) > 1:
		return outside(ps[len(ps)-1], dir, workspace, nil)
	case touchers[name], name == "sed" && slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-i") }):
		return anyOutside(ps, dir, workspace, nil)
	case name == "dd":
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "of="); ok && outside(v, dir, workspace, nil) {
				return true
			}
		}
	}
	return false
}

// paths are the arguments that are not options.
func paths(args []string) []string {
	var out []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return out
}

func anyOutside(ps []string, dir, workspace string, also []string) bool {
	return slices.ContainsFunc(ps, func(p string) bool { return outside(p, dir, workspace, also) })
}

// outside reports whether p, read from dir, names a place outside the
// workspace and the folders in also. It is a reading of the text: "~",
// "$HOME" and other variables count as outside, /dev/null and the standard
// streams do not.
func outside(p, dir, workspace string, also []string) bool {
	switch {
	case p == "" || p == "/dev/null" || p == "/dev/stdout" || p == "/dev/stderr" || strings.HasPrefix(p, "&"):
		return false
	case strings.HasPrefix(p, "~") || strings.Contains(p, "$"):
		return true
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	p = filepath.Clean(p)
	for _, base := range append([]string{workspace}, also...) {
		if base != "" && (p == base || strings.HasPrefix(p, base+string(filepath.Separator))) {
			return false
		}
	}
	return true
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
