// Reading the ledger: which monthly files a query needs, and reading them
// in chunks, in parallel, line by line. Aggregation is in query.go.

package usage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// ledgerFiles lists the files of the months that overlap [since, until),
// oldest first.
func ledgerFiles(dir string, loc *time.Location, since, until time.Time) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".jsonl") || len(name) < len("2006-01.jsonl") {
			continue
		}
		start, err := time.ParseInLocation("2006-01", name[:7], loc)
		if err != nil || (name[7] != '.') {
			continue
		}
		end := start.AddDate(0, 1, 0)
		if (!since.IsZero() && !end.After(since)) || (!until.IsZero() && !start.Before(until)) {
			continue
		}
		out = append(out, filepath.Join(dir, name))
	}
	slices.Sort(out)
	return out, nil
}

// scan calls fn, in order, with every readable record of the months that
// overlap [since, until).
func scan(ctx context.Context, dir string, loc *time.Location, since, until time.Time, fn func(*rawRecord)) error {
	files, err := ledgerFiles(dir, loc, since, until)
	if err != nil {
		return err
	}
	var rec rawRecord
	for _, path := range files {
		err := readChunks(ctx, path, func(chunk []byte) {
			eachLine(chunk, func(line []byte) {
				if parseFast(line, &rec) || parseLine(line, &rec) == nil {
					fn(&rec)
				}
			})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// chunkSize is how much of a file one goroutine parses at a time.
const chunkSize = 4 << 20

// scanParallel feeds the files' chunks (whole lines) to one goroutine per
// aggregator, through a fixed set of buffers (memory stays bounded and the
// garbage collector idle). It returns the number of torn last lines it
// left out.
func scanParallel(ctx context.Context, dir string, loc *time.Location, since, until time.Time, aggs []*aggregator) (int64, error) {
	files, err := ledgerFiles(dir, loc, since, until)
	if err != nil {
		return 0, err
	}
	nbuf := 2*len(aggs) + 1
	chunks := make(chan []byte, nbuf)
	free := make(chan []byte, nbuf)
	for range nbuf {
		free <- make([]byte, 0, chunkSize)
	}
	var wg sync.WaitGroup
	for _, a := range aggs {
		wg.Go(func() {
			rec := new(rawRecord)
			for c := range chunks {
				eachLine(c, func(line []byte) {
					if !parseFast(line, rec) && parseLine(line, rec) != nil {
						a.skipped++
						return
					}
					a.add(rec)
				})
				free <- c[:0]
			}
		})
	}
	var torn int64
	for _, path := range files {
		err = readChunksInto(ctx, path, free, func(c []byte) { chunks <- c }, func() { torn++ })
		if err != nil {
			break
		}
	}
	close(chunks)
	wg.Wait()
	return torn, err
}

// readChunks calls fn with the file's complete lines, a chunk at a time.
func readChunks(ctx context.Context, path string, fn func([]byte)) error {
	free := make(chan []byte, 1)
	free <- make([]byte, 0, bufferFor(path))
	return readChunksInto(ctx, path, free, func(c []byte) { fn(c); free <- c[:0] }, func() {})
}

// bufferFor is the buffer size for reading path: a chunk, or less for a
// smaller file (a month's ledger is often a few kilobytes; a 4 MiB buffer
// for it is 4 MB of memory the process keeps from its first second).
// The buffer grows when the file has grown since.
func bufferFor(path string) int {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return minChunk // none yet (the open fails), or it grows as read
	case st.Size() >= chunkSize:
		return chunkSize
	}
	return max(int(st.Size())+minChunk, 2*minChunk)
}

// minChunk is the least a read asks for.
const minChunk = 4 << 10

// readChunksInto reads path in chunks that end at a line end, into buffers
// taken from free, and hands each to fn (which owns it from then on and
// puts it back in free when done). A last line without its newline is torn: it is left
// out and reported to torn.
func readChunksInto(ctx context.Context, path string, free chan []byte, fn func([]byte), torn func()) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("usage: %w", err)
	}
	defer f.Close()
	var carry []byte
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var buf []byte
		select {
		case buf = <-free:
		case <-ctx.Done():
			return ctx.Err()
		}
		if cap(buf)-len(carry) < minChunk {
			buf = make([]byte, 0, max(chunkSize, 2*len(carry)))
		}
		buf = append(buf[:0], carry...)
		n, rerr := io.ReadFull(f, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		eof := errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF)
		if rerr != nil && !eof {
			return fmt.Errorf("usage: read %s: %w", path, rerr)
		}
		cut := bytes.LastIndexByte(buf, '\n') + 1
		carry = append(carry[:0], buf[cut:]...)
		if cut > 0 {
			fn(buf[:cut])
		} else {
			free <- buf[:0] // no whole line yet: the buffer goes back
		}
		if eof {
			if len(bytes.TrimSpace(carry)) > 0 {
				torn()
			}
			return nil
		}
	}
}

// eachLine calls fn with every non-empty line of chunk.
func eachLine(chunk []byte, fn func([]byte)) {
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			i = len(chunk)
		}
		if line := chunk[:i]; len(line) > 0 {
			fn(line)
		}
		if i == len(chunk) {
			return
		}
		chunk = chunk[i+1:]
	}
}

// Records returns the records f selects, oldest file first (for tests and
// exports; queries use Summarize).
func Records(ctx context.Context, dir string, loc *time.Location, f Filter) ([]Record, error) {
	if loc == nil {
		loc = time.Local
	}
	a := newAggregator(f, GroupNone, loc)
	var out []Record
	err := scan(ctx, dir, loc, f.Since, f.Until, func(r *rawRecord) {
		before := a.total.Calls
		a.add(r)
		if a.total.Calls > before {
			out = append(out, r.record())
		}
	})
	return out, err
}
