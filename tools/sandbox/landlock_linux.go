package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
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

// confineAndExec runs in the helper: limits, cgroup, Landlock, then exec.
func confineAndExec(p policy, prog string, argv []string) error {
	path, err := exec.LookPath(prog)
	if err != nil {
		return err
	}
	l := p.Limits
	for _, r := range []struct {
		res int
		v   uint64
	}{
		{syscall.RLIMIT_CPU, uint64(l.CPUSeconds)},
		{syscall.RLIMIT_AS, uint64(l.MemoryMB) << 20},
		{rlimitNPROC, uint64(l.Processes)},
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
	if p.Cgroup != "" {
		if err := os.WriteFile(filepath.Join(p.Cgroup, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			return fmt.Errorf("join pids cgroup: %w", err)
		}
	}
	if landlockABI() < 1 {
		return errors.New("the kernel has no Landlock; refusing to run unconfined")
	}
	cfg := landlock.V7.BestEffort()
	var rules []landlock.Rule
	if len(p.ReadOnly) > 0 {
		rules = append(rules, landlock.RODirs(p.ReadOnly...).IgnoreIfMissing())
	}
	if len(p.ReadWrite) > 0 {
		rules = append(rules, landlock.RWDirs(p.ReadWrite...).IgnoreIfMissing())
	}
	if len(p.Files) > 0 {
		rules = append(rules, landlock.RWFiles(p.Files...).IgnoreIfMissing())
	}
	if err := cfg.RestrictPaths(rules...); err != nil {
		return fmt.Errorf("landlock paths: %w", err)
	}
	if err := cfg.RestrictScoped(); err != nil {
		return fmt.Errorf("landlock scopes: %w", err)
	}
	if !p.Network {
		if landlockABI() < 4 {
			return fmt.Errorf("network: false needs Landlock ABI 4 (kernel 6.7); this kernel has ABI %d", landlockABI())
		}
		if err := cfg.RestrictNet(); err != nil {
			return fmt.Errorf("landlock network: %w", err)
		}
	}
	return syscall.Exec(path, argv, os.Environ())
}
