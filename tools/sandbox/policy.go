package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// systemReadOnly are the folders every confined child may read and run
// programs from: the system's programs, libraries and configuration. /etc
// is opened entry by entry so its secrets (shadow, sudoers, host keys) stay
// out even for a gateway running as root. Missing ones are skipped.
var systemReadOnly = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/opt", "/nix", "/snap", "/run/systemd/resolve", "/proc", "/sys",
}

// etcSecrets are patterns (filepath.Match) of /etc paths a confined child
// never reads.
var etcSecrets = []string{
	"/etc/shadow*", "/etc/gshadow*", "/etc/sudoers*", "/etc/ssh/ssh_host_*key*",
	"/etc/ssl/private", "/etc/security/opasswd", "/etc/credstore*",
}

// deviceFiles may be read and written by every confined child.
var deviceFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// etcEntries lists what a child may read of /etc: its entries, with the
// folders that hold a secret opened one level deeper and the secrets left
// out.
func etcEntries() []string { return expandMinus("/etc", etcSecrets) }

func expandMinus(dir string, secrets []string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		secret, holds := false, false
		for _, pat := range secrets {
			if ok, _ := filepath.Match(pat, p); ok {
				secret = true
			}
			if strings.HasPrefix(pat, p+"/") {
				holds = true
			}
		}
		switch {
		case secret:
		case holds && e.IsDir():
			out = append(out, expandMinus(p, secrets)...)
		default:
			out = append(out, p)
		}
	}
	return out
}

// cleanPaths makes paths absolute and clean, drops empty and duplicate
// ones, and keeps the order.
func cleanPaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		if strings.TrimSpace(p) == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		p = filepath.Clean(p)
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// withinAny reports whether path is inside one of dirs.
func withinAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if within(path, d) {
			return true
		}
	}
	return false
}
