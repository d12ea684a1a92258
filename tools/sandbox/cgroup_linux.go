package sandbox

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// pidsParent is a cgroup (v1 pids hierarchy) under which a group per
// confined child can be made, or "" where that is not possible (no pids
// controller, not writable, cgroup v2 without delegation).
var pidsParent = sync.OnceValue(func() string {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 8:pids:/some/path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 || !strings.Contains(","+parts[1]+",", ",pids,") {
			continue
		}
		dir := filepath.Join("/sys/fs/cgroup/pids", parts[2], "nanobot-sandbox")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return ""
		}
		if _, err := os.Stat(filepath.Join(dir, "pids.max")); err != nil {
			return ""
		}
		// The folder may exist (made by another user's gateway, root's)
		// without being ours to make groups in.
		probe := filepath.Join(dir, fmt.Sprintf("probe-%d-%x", os.Getpid(), rand.Uint64()))
		if err := os.Mkdir(probe, 0o755); err != nil {
			return ""
		}
		_ = os.Remove(probe)
		return dir
	}
	return ""
})

// newPidsCgroup makes a pids cgroup allowing max processes and returns its
// folder ("" where none can be made). Empty groups of earlier children are
// removed first, so few remain; only groups older than a minute, since a
// fresh one is empty until its helper (perhaps another gateway's, or
// another goroutine's) has moved into it.
func newPidsCgroup(max int64) string {
	parent := pidsParent()
	if parent == "" || max <= 0 {
		return ""
	}
	if old, err := os.ReadDir(parent); err == nil {
		for _, e := range old {
			if info, err := e.Info(); err == nil && e.IsDir() && time.Since(info.ModTime()) > time.Minute {
				_ = os.Remove(filepath.Join(parent, e.Name())) // fails while in use
			}
		}
	}
	dir := filepath.Join(parent, fmt.Sprintf("c%d-%x", os.Getpid(), rand.Uint64()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return ""
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.FormatInt(max, 10)), 0o644); err != nil {
		_ = os.Remove(dir)
		return ""
	}
	return dir
}

// ProcessLimitEnforced reports whether Limits.Processes binds a confined
// child here: through a pids cgroup, or through RLIMIT_NPROC, which the
// kernel does not apply to root.
func ProcessLimitEnforced() bool { return pidsParent() != "" || os.Geteuid() != 0 }

// PidsCgroupAvailable reports whether each confined child gets a pids
// cgroup of its own here.
func PidsCgroupAvailable() bool { return pidsParent() != "" }
