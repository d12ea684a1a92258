// Package atomicfile replaces files so that a crash or a failed write
// leaves either the old content or the new content, never a torn file, and
// changes files under an exclusive lock shared by every process that uses
// Update on the same path.
//
// Concurrency: Write may be called from any goroutine; concurrent Writes to
// one path each replace the file whole (the last rename wins). Update
// serialises read-modify-write cycles on a path across goroutines and
// processes with flock(2) on "<path>.lock". Readers never need a lock: they
// see the old or the new file.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Options tune a write. The zero value is what callers want: fsync the file
// and its folder before returning.
type Options struct {
	// NoSync skips both fsyncs: the replacement is still atomic for
	// readers, but it may be lost (not torn) in a power cut. For caches and
	// tests.
	NoSync bool
	// Wrap, when set, wraps the writer of the temporary file (tests inject
	// write faults with it).
	Wrap func(io.Writer) io.Writer
}

// Write replaces path with data, with file mode perm. Missing parent folders
// are created with mode 0700.
func Write(path string, data []byte, perm os.FileMode) error {
	return Options{}.Write(path, data, perm)
}

// Write replaces path with data: a temporary file ".<name>.tmp-*" in the same
// folder gets mode perm and the data, is fsynced and renamed over path, and
// the folder is fsynced so the rename survives a crash. On any failure path
// is untouched and the temporary file removed.
func (o Options) Write(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	if err = f.Chmod(perm); err != nil {
		return err
	}
	var w io.Writer = f
	if o.Wrap != nil {
		w = o.Wrap(f)
	}
	if _, err = w.Write(data); err != nil {
		return err
	}
	if !o.NoSync {
		if err = f.Sync(); err != nil {
			return err
		}
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	if !o.NoSync {
		// Best effort: the rename already happened, and some file
		// systems cannot sync a folder.
		SyncDir(dir)
	}
	return nil
}

// SyncDir makes renames and creations in dir durable. It is best effort:
// some platforms cannot fsync a folder.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// Update replaces path with fn's result under an exclusive lock on
// "<path>.lock" (mode 0600), so concurrent Updates from any goroutine or
// process never lose a change. fn gets the current content (nil when the
// file does not exist yet); when it returns an error nothing is written and
// Update returns that error unwrapped.
func Update(path string, perm os.FileMode, fn func(old []byte) ([]byte, error)) error {
	return Options{}.Update(path, perm, fn)
}

// Update is the package's Update with these options for the write.
func (o Options) Update(path string, perm os.FileMode, fn func(old []byte) ([]byte, error)) error {
	unlock, err := Lock(path)
	if err != nil {
		return err
	}
	defer unlock()
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	data, err := fn(old)
	if err != nil {
		return err
	}
	return o.Write(path, data, perm)
}

// Lock takes the exclusive lock Update uses for path and returns its
// release. It blocks until the lock is free.
func Lock(path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := lockFile(lock); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		unlockFile(lock)
		_ = lock.Close()
	}, nil
}
