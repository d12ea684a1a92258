package sandbox

import (
	"os"
	"path/filepath"
)

// bwrapArgs is the bubblewrap command line that runs c.argv: a new mount
// namespace that holds only the system folders (read-only, /etc without
// its secrets), a fresh /proc and minimal /dev, a private /tmp, c.ro
// read-only and c.rw read-write; new PID, IPC and UTS namespaces (and
// network with noNetwork); all capabilities dropped, a new session (no
// terminal injection) and death with the parent, which takes the whole PID
// namespace down with it.
func bwrapArgs(bwrap string, c helperConfig, cwd string) []string {
	a := []string{bwrap,
		"--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
	}
	if c.noNetwork {
		a = append(a, "--unshare-net")
	}
	bind := func(flag, p string) {
		fi, err := os.Lstat(p)
		if err != nil {
			return
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			// Merged /usr (/bin -> usr/bin) and /etc links keep their shape.
			if target, err := os.Readlink(p); err == nil {
				a = append(a, "--symlink", target, p)
			}
			return
		}
		a = append(a, flag, p, p)
	}
	for _, p := range systemReadOnly {
		if p == "/proc" || p == "/sys" {
			continue
		}
		bind("--ro-bind", p)
	}
	for _, p := range etcEntries() {
		bind("--ro-bind", p)
	}
	a = append(a, "--ro-bind-try", "/sys", "/sys", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp")
	// Binds follow symlinks in their source; the mount point is the real
	// path, so the child sees its folders where they really are.
	real := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return p
	}
	for _, p := range c.ro {
		if _, err := os.Stat(p); err == nil {
			a = append(a, "--ro-bind", real(p), real(p))
		}
	}
	for _, p := range c.rw {
		if _, err := os.Stat(p); err == nil {
			a = append(a, "--bind", real(p), real(p))
		}
	}
	a = append(a, "--chdir", real(cwd), "--")
	return append(a, c.argv...)
}
