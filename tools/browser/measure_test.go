package browser

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// logMemory logs the resident memory of Chromium's process tree (Linux).
func logMemory(t *testing.T, b *Browser) {
	t.Helper()
	pid, ok := b.Running()
	if !ok || runtime.GOOS != "linux" {
		return
	}
	parent := map[int]int{}
	rss := map[int]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		p, _ := strconv.Atoi(filepath.Base(d))
		status, err := os.ReadFile(filepath.Join(d, "status"))
		if err != nil {
			continue
		}
		rollup, _ := os.ReadFile(filepath.Join(d, "smaps_rollup"))
		for _, line := range strings.Split(string(status)+"\n"+string(rollup), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) >= 2 && f[0] == "PPid:":
				parent[p], _ = strconv.Atoi(f[1])
			case len(f) >= 2 && f[0] == "Pss:":
				rss[p], _ = strconv.Atoi(f[1])
			}
		}
	}
	in := func(p int) bool {
		for ; p > 1; p = parent[p] {
			if p == pid {
				return true
			}
		}
		return false
	}
	total, procs := 0, 0
	for p, kb := range rss {
		if in(p) {
			total += kb
			procs++
		}
	}
	t.Logf("Chromium with one tab: %d processes, %d MB proportional set size (shared pages split among them)", procs, total/1024)
}
