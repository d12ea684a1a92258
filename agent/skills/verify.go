package skills

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// treeVerdict is the last hash check of a registry skill's folder.
type treeVerdict struct {
	stamp uint64 // statStamp of the folder when checked
	want  string // the TreeSHA256 checked against
	err   error  // nil: the files matched
}

// verify checks the folder of registry skill name against its pin. The
// hash is recomputed when the folder's stat stamp or the pin changed;
// a mismatch is logged once per change.
func (l *Loader) verify(name string, pin Locked) error {
	dir := filepath.Join(l.userDir, name)
	stamp, err := statStamp(dir)
	if err != nil {
		return err
	}
	if v, ok := l.verified[name]; ok && v.stamp == stamp && v.want == pin.TreeSHA256 {
		return v.err
	}
	got, err := TreeHash(dir)
	v := treeVerdict{stamp: stamp, want: pin.TreeSHA256}
	switch {
	case err != nil:
		v.err = err
	case got != pin.TreeSHA256:
		v.err = ErrTampered
		l.log.Warn("skill skipped: its files differ from the installed version",
			"skill", name, "version", pin.Version, "want_tree_sha256", pin.TreeSHA256, "got_tree_sha256", got)
	}
	l.verified[name] = v
	return v.err
}

// statStamp summarises every entry under dir (path, size, mode, time), so
// an edit shows without reading the files.
func statStamp(dir string) (uint64, error) {
	h := fnv.New64a()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00%d\n", path, fi.Size(), fi.Mode(), fi.ModTime().UnixNano())
		return nil
	})
	return h.Sum64(), err
}

// lockCache keeps the parsed lock file while its size and time stay.
type lockCache struct {
	mod  time.Time
	size int64
	lock Lock
	err  error
	ok   bool
}

func (c *lockCache) read(dir string) (Lock, error) {
	fi, err := os.Stat(LockPath(dir))
	if errors.Is(err, fs.ErrNotExist) {
		*c = lockCache{}
		return Lock{Skills: map[string]Locked{}}, nil
	}
	if err != nil {
		return Lock{Skills: map[string]Locked{}}, err
	}
	if c.ok && c.mod.Equal(fi.ModTime()) && c.size == fi.Size() {
		return c.lock, c.err
	}
	lock, err := ReadLock(dir)
	if err != nil {
		lock = Lock{Skills: map[string]Locked{}}
	}
	*c = lockCache{mod: fi.ModTime(), size: fi.Size(), lock: lock, err: err, ok: true}
	return lock, err
}
