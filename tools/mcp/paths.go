package mcp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// stdioReadable lists what a confined stdio server may read besides the
// system folders: its program's installation (the folder holding the
// program, or the prefix above a bin/ folder, so node finds its libraries),
// its working folder, and every existing absolute path in its arguments
// (a script's package root when it lies in node_modules, a folder the
// server is told to serve). Writing stays limited to the workspace and
// tools.exec.allowPaths.readWrite.
func stdioReadable(command, dir string, args []string) []string {
	var out []string
	if p, err := exec.LookPath(command); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if abs, err := filepath.Abs(p); err == nil {
			bin := filepath.Dir(abs)
			out = append(out, notHome(installRoot(bin), bin))
		}
	}
	if dir != "" {
		out = append(out, dir)
	}
	for _, a := range args {
		if !filepath.IsAbs(a) {
			continue
		}
		fi, err := os.Stat(a)
		if err != nil {
			continue
		}
		if !fi.IsDir() {
			a = filepath.Dir(a)
		}
		out = append(out, notHome(nodeModulesRoot(a), a))
	}
	return out
}

// notHome returns wide unless it is "/", the home folder or above it (a
// program in ~/bin must not open all of $HOME); then narrow.
func notHome(wide, narrow string) string {
	home, _ := os.UserHomeDir()
	if wide == string(filepath.Separator) || (home != "" && (wide == home || strings.HasPrefix(home, wide+string(filepath.Separator)))) {
		return narrow
	}
	return wide
}

// installRoot maps ".../bin" to its parent.
func installRoot(dir string) string {
	if filepath.Base(dir) == "bin" {
		return filepath.Dir(dir)
	}
	return dir
}

// nodeModulesRoot maps a path inside node_modules to the folder holding the
// outermost node_modules (where the package's dependencies resolve from).
func nodeModulesRoot(p string) string {
	if i := strings.Index(p, string(filepath.Separator)+"node_modules"+string(filepath.Separator)); i >= 0 {
		return p[:i]
	}
	return p
}
