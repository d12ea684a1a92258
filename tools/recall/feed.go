package recall

import (
	"context"
	"time"
)

// Feed is the session store as the index reads it: files that grow by
// whole lines at the end and are sometimes replaced whole (a rewrite, an
// archive). The index remembers how far it read each file and reads only
// what was added since; a file replaced or cut short is read again from
// the start. A Feed is called from one goroutine at a time.
type Feed interface {
	// Files lists the stored conversation files.
	Files(ctx context.Context) ([]FeedFile, error)
	// ReadFrom calls fn with each message of file name from byte offset
	// on, up to the last complete line, and returns the offset after it.
	// A message's Session and Archived are the file's, also when offset
	// is past the line that names them.
	ReadFrom(ctx context.Context, name string, offset int64, fn func(Message) error) (next int64, err error)
	// TailSum is a checksum of the bytes of file name just before
	// offset, which tells a file that grew from one that was replaced.
	TailSum(name string, offset int64) (uint64, error)
}

// FeedFile is one file of a Feed.
type FeedFile struct {
	Name    string
	Size    int64
	ModTime time.Time
}
