package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// bwrapProbe finds bubblewrap and runs a trivial command in the namespaces
// the bwrap mode uses, once: installed is not enough where the host (a
// container, a hardened kernel) forbids creating namespaces.
var bwrapProbe = sync.OnceValues(func() (string, error) {
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return "", errors.New("not installed (Debian/Ubuntu package bubblewrap)")
	}
	out, err := exec.Command(p, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--unshare-pid", "--unshare-net", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "true").CombinedOutput()
	if err != nil {
		return "", errors.New("installed but cannot create namespaces here: " + firstLine(string(out), err))
	}
	return p, nil
})

// Bwrap returns the path of a working bubblewrap, or why there is none.
func Bwrap() (string, error) { return bwrapProbe() }

// namespaceProbe starts a no-op child in the namespaces the landlock mode
// gives each command, once.
var namespaceProbe = sync.OnceValue(func() bool {
	p, err := exec.LookPath("true")
	if err != nil {
		return false
	}
	cmd := exec.Command(p)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	setNamespaces(cmd.SysProcAttr, true)
	return cmd.Run() == nil
})

// Namespaces reports whether confined commands get user, PID and mount
// namespaces of their own in landlock mode (and a network namespace with
// the network off): where unprivileged user namespaces work, or for root.
func Namespaces() bool { return !noNamespaces.Load() && namespaceProbe() }

// setNamespaces puts the helper in new user, PID and mount namespaces
// (and with noNetwork a network namespace with no interface up). The user
// namespace maps only the gateway's own uid and gid onto themselves, so
// file access is unchanged.
func setNamespaces(a *syscall.SysProcAttr, noNetwork bool) {
	uid, gid := os.Getuid(), os.Getgid()
	a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
	if noNetwork {
		a.Cloneflags |= syscall.CLONE_NEWNET
	}
	if uid != 0 {
		// A uid other than 0 loses its namespace capabilities at exec;
		// CAP_SYS_ADMIN kept in the ambient set lets the helper mount its
		// /proc. The second stage drops it before the command runs.
		a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
	}
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	a.GidMappingsEnableSetgroups = false
}

// firstLine is the first line of a command's output, or err.
func firstLine(out string, err error) string {
	if line, _, _ := strings.Cut(strings.TrimSpace(out), "\n"); line != "" {
		return line
	}
	return err.Error()
}
