package sandbox

import (
	"bufio"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroupPrefix names the pids cgroups the helper creates.
const cgroupPrefix = "nanobot-sandbox-"

// joinPidsCgroup moves the helper into a new pids cgroup capped at max
// tasks, below its current one. RLIMIT_NPROC does not bind root, so for a
// gateway running as root (or with a delegated cgroup) this is what stops a
// fork bomb. It is best effort: without a writable pids hierarchy it
// returns an error and changes nothing. Empty cgroups left by earlier
// children are removed on the way.
func joinPidsCgroup(max int) error {
	dir, err := pidsCgroupDir()
	if err != nil {
		return err
	}
	sweepCgroups(dir)
	// Not the PID: inside a PID namespace every helper is 1.
	own := filepath.Join(dir, cgroupPrefix+rand.Text()[:16])
	if err := os.Mkdir(own, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(own, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		_ = os.Remove(own)
		return err
	}
	if err := os.WriteFile(filepath.Join(own, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		_ = os.Remove(own)
		return err
	}
	return nil
}

// sweepCgroups removes the helper cgroups under dir whose processes are
// all gone (rmdir fails on a cgroup still in use).
func sweepCgroups(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), cgroupPrefix) {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// pidsCgroupDir is the folder of the helper's current cgroup in a hierarchy
// where the pids controller can limit a child cgroup: cgroup v1's pids
// hierarchy, or a v2 cgroup whose subtree_control enables pids.
func pidsCgroupDir() (string, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return "", err
	}
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "hierarchy-ID:controller-list:cgroup-path"
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" && parts[0] == "0" {
			root, ok := mounts["cgroup2"]
			if !ok {
				continue
			}
			dir := filepath.Join(root, parts[2])
			ctl, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
			if err == nil && strings.Contains(" "+strings.TrimSpace(string(ctl))+" ", " pids ") {
				return dir, nil
			}
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if root, ok := mounts["pids"]; ok && c == "pids" {
				return filepath.Join(root, parts[2]), nil
			}
		}
	}
	return "", errors.New("no pids cgroup to create a child in")
}

// cgroupMounts maps "pids" to the mount point of cgroup v1's pids
// hierarchy and "cgroup2" to the unified hierarchy's.
func cgroupMounts() (map[string]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 || pf[3] != "/" {
			continue
		}
		switch qf[0] {
		case "cgroup2":
			if _, seen := out["cgroup2"]; !seen {
				out["cgroup2"] = pf[4]
			}
		case "cgroup":
			for _, o := range strings.Split(qf[2], ",") {
				if o == "pids" {
					out["pids"] = pf[4]
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no cgroup file system mounted")
	}
	return out, sc.Err()
}
