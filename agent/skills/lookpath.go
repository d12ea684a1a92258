package skills

import (
	"os"
	"path/filepath"
	"time"
)

// pathSearches remembers which required binaries are on PATH between
// scans. A scan runs for every turn (the system prompt lists the skills),
// and searching PATH is a stat per folder per binary; the answers hold
// while PATH names the same folders and none of them changed (installing
// or removing a program changes its folder's modification time). It is
// not safe for concurrent use (the Loader's mutex guards it).
type pathSearches struct {
	path    string      // the PATH the answers are for
	mods    []time.Time // modification time of each of its folders
	checked time.Time   // when mods were last compared
	found   map[string]bool
}

// pathRecheck is how often the folders on PATH are looked at again: a
// program installed is seen at the first scan after that (a stat per
// folder is not free, and two scans run per turn).
const pathRecheck = 2 * time.Second

// finder returns the function a scan asks whether bin is on PATH. When
// keep is false (a LookPath other than exec.LookPath, in tests), answers
// last one scan only.
func (p *pathSearches) finder(lookPath func(string) (string, error), keep bool) func(string) bool {
	if !keep {
		*p = pathSearches{}
	} else if path := os.Getenv("PATH"); path != p.path || p.found == nil || time.Since(p.checked) >= pathRecheck {
		if mods := folderTimes(path); path != p.path || p.found == nil || !equalTimes(mods, p.mods) {
			p.path, p.mods, p.found = path, mods, map[string]bool{}
		}
		p.checked = time.Now()
	}
	if p.found == nil {
		p.found = map[string]bool{}
	}
	return func(bin string) bool {
		found, ok := p.found[bin]
		if !ok {
			_, err := lookPath(bin)
			found = err == nil
			p.found[bin] = found
		}
		return found
	}
}

// folderTimes is the modification time of each folder on path (zero for
// one that cannot be read).
func folderTimes(path string) []time.Time {
	dirs := filepath.SplitList(path)
	mods := make([]time.Time, len(dirs))
	for i, d := range dirs {
		if d == "" {
			d = "."
		}
		if fi, err := os.Stat(d); err == nil {
			mods[i] = fi.ModTime()
		}
	}
	return mods
}

func equalTimes(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}
