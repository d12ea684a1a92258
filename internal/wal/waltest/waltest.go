// Package waltest injects storage faults into internal/wal files: a Disk
// whose Open is passed as wal.Options.Open (or the journal's and outbox's
// Open option) can be made "full", after which writes store only part of
// their bytes and fail with ENOSPC, like a real full file system.
//
// A Disk is safe for concurrent use.
package waltest

import (
	"os"
	"sync/atomic"
	"syscall"

	"github.com/nanobot-go/nanobot/internal/wal"
)

// Disk opens real files whose writes fail while the disk is full.
type Disk struct {
	full     atomic.Bool
	failures atomic.Int64
}

// SetFull makes writes fail (true) or work again (false).
func (d *Disk) SetFull(full bool) { d.full.Store(full) }

// Failures counts the writes and syncs that failed.
func (d *Disk) Failures() int64 { return d.failures.Load() }

// Open implements wal.OpenFunc.
func (d *Disk) Open(name string, flag int, perm os.FileMode) (wal.File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &file{File: f, d: d}, nil
}

type file struct {
	*os.File
	d *Disk
}

// Write stores half of p and fails with ENOSPC while the disk is full: a
// torn record is left in the file.
func (f *file) Write(p []byte) (int, error) {
	if f.d.full.Load() {
		f.d.failures.Add(1)
		n, _ := f.File.Write(p[:len(p)/2])
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

// Sync fails with ENOSPC while the disk is full.
func (f *file) Sync() error {
	if f.d.full.Load() {
		f.d.failures.Add(1)
		return &os.PathError{Op: "sync", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Sync()
}
