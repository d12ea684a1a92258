package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// probe asks the kernel for its Landlock ABI and tries bubblewrap and a
// user namespace with a trivial command each.
func probe() Support {
	var s Support
	s.LandlockABI, s.LandlockNote = landlockABI()
	if p, err := exec.LookPath("bwrap"); err != nil {
		s.BwrapNote = "not installed (Debian package bubblewrap)"
	} else if out, err := exec.Command(p, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-net", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "true").CombinedOutput(); err != nil {
		s.BwrapNote = "installed but cannot create namespaces here: " + firstLine(string(out), err)
	} else {
		s.Bwrap = p
	}
	s.UserNS = userNSWorks()
	s.PidsCgroup = pidsCgroupWorks()
	return s
}

// landlockABI returns the kernel's ABI version, lowered to 5 when the fix
// for signal scoping (erratum 2) is missing, as go-landlock does.
func landlockABI() (int, string) {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EOPNOTSUPP) {
			return 0, "not supported by the kernel or not enabled at boot (lsm=landlock)"
		}
		return 0, err.Error()
	}
	if v >= 6 {
		if e, err := ll.LandlockGetErrata(); err != nil || e&0x2 == 0 {
			v = 5
		}
	}
	return v, ""
}

// pidsCgroupWorks creates and removes a child pids cgroup.
func pidsCgroupWorks() bool {
	dir, err := pidsCgroupDir()
	if err != nil {
		return false
	}
	probe := filepath.Join(dir, fmt.Sprintf("%sprobe-%d", cgroupPrefix, os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return false
	}
	_ = os.Remove(probe)
	return true
}

// userNSWorks starts a no-op child in its own user and network namespace.
func userNSWorks() bool {
	p, err := exec.LookPath("true")
	if err != nil {
		return false
	}
	cmd := exec.Command(p)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	setNamespaces(cmd.SysProcAttr, true)
	return cmd.Run() == nil
}

// setNamespaces puts the child in a new user namespace where it keeps its
// own uid and gid (so file access is unchanged), with its own PID and mount
// namespaces (the helper mounts a /proc that shows only the sandbox, and
// when the first process ends every other one in the sandbox is killed,
// whatever session or group it moved to), and with noNetwork also in a new
// network namespace that has no interface up.
func setNamespaces(a *syscall.SysProcAttr, noNetwork bool) {
	uid, gid := syscall.Getuid(), syscall.Getgid()
	a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
	if noNetwork {
		a.Cloneflags |= syscall.CLONE_NEWNET
	}
	if uid != 0 {
		// Capabilities in the new namespace end at exec for a uid other
		// than 0; keep CAP_SYS_ADMIN across it so the helper can mount
		// its /proc. The helper drops it before it runs the program.
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
