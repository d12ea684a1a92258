package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// execConfined applies c to the helper and execs the program (or
// bubblewrap around it). It returns only on failure.
func execConfined(c helperConfig) error {
	// Landlock and no_new_privs go on this thread only, and the program
	// is exec'd from it, inheriting them: no all-threads machinery (which
	// reads /proc/<pid>/task and breaks inside a PID namespace).
	runtime.LockOSThread()
	// The cgroup is joined first: its files live under /sys, which the
	// program may only read.
	if c.limits.Processes > 0 && !c.stage2 {
		_ = joinPidsCgroup(c.limits.Processes)
	}
	if c.mode == ModeLandlock && c.userNS && !c.stage2 {
		// Best effort: where the host's /proc has masked parts (as in
		// containers) a new one cannot be mounted; Landlock still keeps
		// other processes' private files out of reach.
		_ = mountProc()
		return runInit(c)
	}
	env := childEnv()
	var argv []string
	switch c.mode {
	case ModeLandlock:
		dropCapabilities()
		if _, err := restrictLandlock(c); err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
		path, err := lookPath(c.argv[0], env)
		if err != nil {
			return err
		}
		argv = append([]string{path}, c.argv[1:]...)
	case ModeBwrap:
		bw, err := exec.LookPath(c.bwrap)
		if err != nil {
			return fmt.Errorf("bubblewrap: %w", err)
		}
		cwd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("working folder: %w", err)
		}
		argv = bwrapArgs(bw, c, cwd)
	}
	if err := setLimits(c.limits, c.userNS); err != nil {
		return err
	}
	err := syscall.Exec(argv[0], argv, env)
	return fmt.Errorf("exec %s: %w", argv[0], err)
}

// mountProc gives the helper's mount namespace (new, from setNamespaces)
// a /proc of its own PID namespace, without the change reaching the host.
func mountProc() error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	return nil
}

// dropCapabilities leaves the program none: the ambient set that let the
// helper mount /proc is cleared and, where allowed, the bounding set
// emptied, so that a gateway running as root (uid 0 inside its namespace,
// or in the host's when there is none) does not hand its commands every
// capability.
func dropCapabilities() {
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		_ = unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
	}
}

// lookPath finds the program in the child's PATH, after Landlock applies,
// so that what is found is also what may run.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); err != nil {
			return "", fmt.Errorf("%w: %s: %v", errNotFound, name, err)
		}
		return name, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s is not in PATH (or not allowed by the sandbox)", errNotFound, name)
}

// restrictLandlock confines the helper (and so the program it becomes):
// the system folders read-only, /etc without its secrets, a few devices,
// c.ro read-only and c.rw read-write; with noNetwork no TCP bind or
// connect; and from ABI 6 no signals to, or abstract-socket connections
// with, processes outside the sandbox. Nothing else of the file system is
// reachable. It returns the ABI enforced.
func restrictLandlock(c helperConfig) (int, error) {
	abi, note := landlockABI()
	if abi < 1 {
		return 0, fmt.Errorf("unavailable: %s", note)
	}
	target := landlock.V7
	cfg := landlock.Config{HandledAccessFS: target.HandledAccessFS, Scoped: target.Scoped}
	if c.noNetwork {
		if abi < 4 && !c.userNS {
			return 0, fmt.Errorf("network off needs Landlock ABI 4 or a network namespace; this kernel has ABI %d and no user namespaces", abi)
		}
		cfg.HandledAccessNet = target.HandledAccessNet
	}
	var roDirs, roFiles, rwDirs, rwFiles []string
	split := func(paths []string, dirs, files *[]string) {
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
	split(append(append([]string{}, systemReadOnly...), etcEntries()...), &roDirs, &roFiles)
	split(c.ro, &roDirs, &roFiles)
	split(c.rw, &rwDirs, &rwFiles)
	split(deviceFiles, &rwFiles, &rwFiles)
	rw := landlock.RWDirs(rwDirs...)
	if abi >= 2 {
		// Moving and linking files between folders of the workspace
		// (git, mv) needs "refer"; asking for it below ABI 2 would turn
		// best-effort mode into no sandbox at all.
		rw = rw.WithRefer()
	}
	rules := []landlock.Rule{
		landlock.RODirs(roDirs...).IgnoreIfMissing(),
		landlock.ROFiles(roFiles...).IgnoreIfMissing(),
		rw.IgnoreIfMissing(),
		landlock.RWFiles(rwFiles...).WithIoctlDev().IgnoreIfMissing(),
	}
	fd, flags, err := cfg.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return 0, err
	}
	if fd < 0 {
		return 0, errors.New("nothing to enforce (bug)")
	}
	defer syscall.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return 0, fmt.Errorf("no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return 0, fmt.Errorf("restrict: %w", err)
	}
	return min(abi, LandlockTargetABI), nil
}

// setLimits applies the resource limits to the helper; the program
// inherits them. Limits above the current hard limit are lowered to it.
func setLimits(l Limits, freshUserNS bool) error {
	set := func(name string, res int, v uint64, slack uint64) error {
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(res, &cur); err != nil {
			return fmt.Errorf("getrlimit %s: %w", name, err)
		}
		lim := syscall.Rlimit{Cur: min(v, cur.Max), Max: min(v+slack, cur.Max)}
		if err := syscall.Setrlimit(res, &lim); err != nil {
			return fmt.Errorf("setrlimit %s: %w", name, err)
		}
		return nil
	}
	const mib = 1 << 20
	if err := set("core", syscall.RLIMIT_CORE, 0, 0); err != nil {
		return err
	}
	if l.CPUSeconds > 0 {
		// SIGXCPU at the soft limit, SIGKILL a second later.
		if err := set("cpu", syscall.RLIMIT_CPU, uint64(l.CPUSeconds), 1); err != nil {
			return err
		}
	}
	if l.FileSizeMB > 0 {
		if err := set("fsize", syscall.RLIMIT_FSIZE, uint64(l.FileSizeMB)*mib, 0); err != nil {
			return err
		}
	}
	if l.Processes > 0 {
		n := uint64(l.Processes)
		if !freshUserNS {
			// RLIMIT_NPROC counts every process of the user; in a fresh
			// user namespace only the sandbox's own.
			n += uint64(countUserProcesses(os.Getuid()))
		}
		if err := set("nproc", rlimitNPROC, n, 0); err != nil {
			return err
		}
	}
	// Last: the helper itself (maybe a race-instrumented test binary) maps
	// far more than the program will.
	if l.MemoryMB > 0 {
		if err := set("as", syscall.RLIMIT_AS, uint64(l.MemoryMB)*mib, 0); err != nil {
			return err
		}
	}
	return nil
}

const rlimitNPROC = 6 // RLIMIT_NPROC on Linux

// countUserProcesses counts the processes and threads whose real uid is uid.
func countUserProcesses(uid int) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	want := strconv.Itoa(uid)
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		var real, threads string
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				if f := strings.Fields(v); len(f) > 0 {
					real = f[0]
				}
			}
			if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				threads = strings.TrimSpace(v)
			}
		}
		if real == want {
			t, err := strconv.Atoi(threads)
			if err != nil || t < 1 {
				t = 1
			}
			n += t
		}
	}
	return n
}
