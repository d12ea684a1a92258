package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// landlockABI is the kernel's Landlock ABI version (0 = none), read once.
var landlockABI = sync.OnceValue(func() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
})

// LandlockABI reports the kernel's Landlock ABI version, 0 when the kernel
// has none (or it is disabled).
func LandlockABI() int { return landlockABI() }

// rlimitNPROC is RLIMIT_NPROC, which package syscall does not name.
const rlimitNPROC = 6

// confineAndExec runs in the helper. Started in fresh namespaces, it joins
// the pids cgroup, mounts the sandbox's /proc and stays as the namespace's
// init (runInit), which starts the second stage. Otherwise (and in that
// second stage) it drops capabilities, sets the limits, applies Landlock,
// the port wall (p.WallFD) and the socket filter, or raises the port wall
// and builds the bubblewrap command line (which hands bubblewrap the
// filter), and executes the command.
func confineAndExec(p policy, prog string, argv []string) error {
	// Landlock and no_new_privs go on this thread only; the command is
	// executed from it and inherits them. (The all-threads way reads
	// /proc/self/task, which is not there inside a fresh PID namespace
	// before /proc is mounted.)
	runtime.LockOSThread()
	if p.Cgroup != "" && !p.Stage2 {
		// "0" is the writer itself, whatever PID namespace it is in.
		if err := os.WriteFile(filepath.Join(p.Cgroup, "cgroup.procs"), []byte("0"), 0o644); err != nil {
			return fmt.Errorf("join pids cgroup: %w", err)
		}
	}
	if p.Namespaces && !p.Stage2 {
		if os.Getpid() != 1 {
			// Run by hand with "ns": mounting here would change the
			// host's /proc.
			return errors.New("the policy says namespaces, but the helper was not started in a new PID namespace")
		}
		// Best effort: where the host's /proc has masked parts (as in
		// some containers) no new one can be mounted; the command then
		// gets no /proc at all.
		p.Proc = mountProc() == nil
		return runInit(p, argv)
	}
	if p.Mode == ModeBwrap {
		// bubblewrap needs the capabilities of a root gateway to build
		// its namespaces; it drops them all itself (--cap-drop ALL).
		if err := setLimits(p); err != nil {
			return err
		}
		cwd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("working folder: %w", err)
		}
		if p.WallFD > 0 {
			// A Landlock layer that handles no file-system access leaves
			// bubblewrap free to mount; it and the command inherit it.
			if err := raisePortWall(p.WallFD); err != nil {
				return err
			}
		}
		filterFD := -1
		if install, blockUnix := p.socketFilter(); install {
			f, err := socketFilterFile(blockUnix)
			if err != nil {
				return err
			}
			defer f.Close() // only reached when exec fails
			filterFD = int(f.Fd())
		}
		args := bwrapArgs(p, cwd, filterFD, argv)
		return syscall.Exec(p.Bwrap, args, os.Environ())
	}
	if landlockABI() < 1 {
		return errors.New("the kernel has no Landlock; refusing to run unconfined")
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := setLimits(p); err != nil {
		return err
	}
	if err := restrictLandlock(p); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if p.WallFD > 0 {
		if err := raisePortWall(p.WallFD); err != nil {
			return err
		}
	}
	if install, blockUnix := p.socketFilter(); install {
		// After Landlock, which set no_new_privs.
		if err := installSocketFilter(blockUnix); err != nil {
			return err
		}
	}
	return syscall.Exec(prog, argv, os.Environ())
}

// setLimits applies the resource limits to the helper; the command
// inherits them.
func setLimits(p policy) error {
	l := p.Limits
	nproc := uint64(l.Processes)
	if nproc > 0 && !p.Namespaces && os.Getuid() != 0 {
		// RLIMIT_NPROC counts every task of the user (the gateway's
		// threads, the user's other programs); only in a user namespace
		// of the sandbox's own does it count the sandbox's alone. Without
		// one, allow Processes more than are running now.
		nproc += uint64(countUserTasks(os.Getuid()))
	}
	for _, r := range []struct {
		res int
		v   uint64
	}{
		{syscall.RLIMIT_CPU, uint64(l.CPUSeconds)},
		{syscall.RLIMIT_AS, uint64(l.MemoryMB) << 20},
		{rlimitNPROC, nproc},
		{syscall.RLIMIT_FSIZE, uint64(l.FileSizeMB) << 20},
	} {
		if r.v == 0 {
			continue
		}
		lim := syscall.Rlimit{Cur: r.v, Max: r.v}
		if err := syscall.Setrlimit(r.res, &lim); err != nil {
			return fmt.Errorf("setrlimit %d: %w", r.res, err)
		}
	}
	return nil
}

// mountProc gives the helper's new mount namespace a /proc of its own PID
// namespace, without the change reaching the host.
func mountProc() error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	return nil
}

// dropCapabilities leaves the command none: the bounding set is emptied
// where this process may (root, or root of its own user namespace), the
// ambient set that let the helper mount /proc is cleared, and the
// permitted, effective and inheritable sets are zeroed, so that a gateway
// running as root does not hand its commands every capability. With
// no_new_privs (set with Landlock) no setuid program brings one back.
func dropCapabilities() error {
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		_ = unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0) // EPERM without CAP_SETPCAP: nothing to drop
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	return nil
}

// restrictLandlock confines this thread (and so the command executed from
// it) to p: p.ReadOnly read-only (/etc without its secrets, and /proc when
// the sandbox has its own), p.ReadWrite and p.Files read-write, nothing else of the file
// system; with the network off no TCP bind or connect; no signals to, or
// abstract-socket connections with, processes outside the sandbox.
func restrictLandlock(p policy) error {
	abi := landlockABI()
	cfg := landlock.Config{HandledAccessFS: landlock.V7.HandledAccessFS, Scoped: landlock.V7.Scoped}
	if !p.Network {
		switch {
		case abi >= 4:
			cfg.HandledAccessNet = landlock.V7.HandledAccessNet
		case !p.Namespaces:
			return fmt.Errorf("network: false needs Landlock ABI 4 (kernel 6.7) or a network namespace; this kernel has ABI %d and no user namespaces", abi)
		}
	}
	ro := withoutEtcSecrets(p.ReadOnly)
	if p.Proc {
		ro = append(ro[:len(ro):len(ro)], "/proc")
	}
	var roDirs, roFiles, rwDirs, rwFiles []string
	split(ro, &roDirs, &roFiles)
	split(p.ReadWrite, &rwDirs, &rwFiles)
	split(p.Files, &rwFiles, &rwFiles)
	fd, flags, err := cfg.BestEffort().NewRulesetFD(
		landlock.RODirs(roDirs...).IgnoreIfMissing(),
		landlock.ROFiles(roFiles...).IgnoreIfMissing(),
		landlock.RWDirs(rwDirs...).IgnoreIfMissing(),
		landlock.RWFiles(rwFiles...).IgnoreIfMissing(),
	)
	if err != nil {
		return err
	}
	if fd < 0 {
		return errors.New("nothing to enforce")
	}
	defer syscall.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("restrict: %w", err)
	}
	return nil
}

// split sorts existing paths into folders and files; missing ones are
// skipped.
func split(paths []string, dirs, files *[]string) {
	for _, p := range paths {
		fi, err := os.Stat(p)
		switch {
		case err != nil:
		case fi.IsDir():
			*dirs = append(*dirs, p)
		default:
			*files = append(*files, p)
		}
	}
}

// countUserTasks counts the threads of processes whose real uid is uid,
// which is what RLIMIT_NPROC counts.
func countUserTasks(uid int) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	want := strconv.Itoa(uid)
	n := 0
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		var realUID string
		threads := 1
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				if f := strings.Fields(v); len(f) > 0 {
					realUID = f[0]
				}
			} else if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				if t, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && t > 0 {
					threads = t
				}
			}
		}
		if realUID == want {
			n += threads
		}
	}
	return n
}
