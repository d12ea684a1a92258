package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
)

// bwrapArgs is the bubblewrap command line that runs argv under p: a new
// mount namespace holding only the system folders (/etc without its
// secrets) and p's folders
// (p.ReadOnly read-only, p.ReadWrite read-write), a /proc of its own, a
// minimal /dev and a private /tmp; new PID, IPC, UTS and cgroup
// namespaces, and a network namespace with the network off; all
// capabilities dropped, a new session (no typing into the gateway's
// terminal) and death with the helper, which takes the whole PID namespace
// with it. filterFD >= 0 is an open file with the UNIX socket filter,
// which bubblewrap installs before it executes the command.
func bwrapArgs(p policy, cwd string, filterFD int, argv []string) []string {
	a := []string{p.Bwrap,
		"--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
	}
	if filterFD >= 0 {
		a = append(a, "--seccomp", strconv.Itoa(filterFD))
	}
	if !p.Network {
		a = append(a, "--unshare-net")
	}
	var bound []string
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			// Merged /usr (/bin -> usr/bin) keeps its shape.
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
			continue
		}
		a = append(a, "--ro-bind", d, d)
		bound = append(bound, d)
	}
	// /etc is bound whole; its secrets are covered up.
	for _, secret := range etcSecretPaths() {
		if fi, err := os.Lstat(secret); err == nil && fi.IsDir() {
			a = append(a, "--tmpfs", secret)
		} else if err == nil && fi.Mode().IsRegular() {
			a = append(a, "--ro-bind", "/dev/null", secret)
		}
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp")
	// p's paths are real (symlinks resolved), so the command finds its
	// folders where they really are.
	for _, d := range p.ReadOnly {
		if _, err := os.Stat(d); err == nil && !underAny(d, bound) {
			a = append(a, "--ro-bind", d, d)
		}
	}
	for _, d := range p.ReadWrite {
		if _, err := os.Stat(d); err == nil {
			a = append(a, "--bind", d, d)
		}
	}
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real
	}
	if !underAny(cwd, bound) && !underAny(cwd, p.ReadOnly) && !underAny(cwd, p.ReadWrite) {
		// The gateway's folder is not in the sandbox; start at its root
		// rather than fail (with Landlock the command would be in a folder
		// it cannot read).
		cwd = "/"
	}
	a = append(a, "--chdir", cwd, "--")
	return append(a, argv...)
}
