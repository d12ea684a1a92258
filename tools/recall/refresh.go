package recall

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// The source keys of the memory files and the prefix of the sessions'.
const (
	memoryPrefix  = "memory/"
	sessionPrefix = "sessions/"
)

// memoryFiles are the memory files searched, and how each is cut into
// pieces.
var memoryFiles = []struct {
	name string
	cut  func(string) []part
}{
	{"MEMORY.md", sections},
	{"HISTORY.md", entries},
}

// refreshLocked reads what changed in the files since the last refresh.
// x.update is held; the files are read with no lock held and each file's
// pieces applied under the write lock.
func (x *Index) refreshLocked(ctx context.Context) error {
	mem := filepath.Join(x.opts.Workspace, "memory")
	for _, mf := range memoryFiles {
		key := memoryPrefix + mf.name
		data, err := os.ReadFile(filepath.Join(mem, mf.name))
		if errors.Is(err, os.ErrNotExist) {
			x.apply(key, true, nil, nil)
			continue
		}
		if err != nil {
			return err
		}
		sum := contentSum(data)
		if src, ok := x.source(key); ok && src.Sum == sum {
			continue
		}
		var ps []piece
		for _, p := range mf.cut(string(data)) {
			ps = append(ps, piece{Source: key, Label: mf.name + p.title, Text: p.body})
		}
		x.apply(key, true, ps, &source{Sum: sum})
	}
	if x.opts.Feed == nil {
		return nil
	}
	files, err := x.opts.Feed.Files(ctx)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		key := sessionPrefix + f.Name
		seen[key] = true
		if err := x.readFile(ctx, key, f); err != nil {
			return err
		}
	}
	for _, key := range x.sourceKeys(sessionPrefix) {
		if !seen[key] {
			x.apply(key, true, nil, nil) // archived under another name, or deleted
		}
	}
	return nil
}

// readFile reads what was added to one conversation file, or all of it
// when it was replaced or cut since.
func (x *Index) readFile(ctx context.Context, key string, f FeedFile) error {
	src, known := x.source(key)
	from, reset := int64(0), true
	if known {
		switch {
		case f.Size == src.Offset:
			return nil // unchanged
		case f.Size > src.Offset:
			if sum, err := x.opts.Feed.TailSum(f.Name, src.Offset); err == nil && sum == src.Sum {
				from, reset = src.Offset, false
			}
		}
	}
	var ps []piece
	next, err := x.opts.Feed.ReadFrom(ctx, f.Name, from, func(m Message) error {
		if (m.Role == "user" || m.Role == "assistant") && strings.TrimSpace(m.Text) != "" {
			ps = append(ps, piece{Source: key, Label: messageSource(m), Session: m.Session, Archived: m.Archived, Text: m.Text})
		}
		return nil
	})
	if err != nil {
		return err
	}
	sum, err := x.opts.Feed.TailSum(f.Name, next)
	if err != nil {
		return nil // gone or replaced meanwhile: the next refresh reads it afresh
	}
	x.apply(key, reset, ps, &source{Offset: next, Sum: sum})
	return nil
}

// source returns what is known of a file.
func (x *Index) source(key string) (source, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	s, ok := x.st.Sources[key]
	if !ok {
		return source{}, false
	}
	return *s, true
}

// sourceKeys lists the known sources under prefix.
func (x *Index) sourceKeys(prefix string) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []string
	for k := range x.st.Sources {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

// apply changes one source: reset drops what was read of it before, ps
// are added, and src (nil: forget the source) is where reading stands.
func (x *Index) apply(key string, reset bool, ps []piece, src *source) {
	x.mu.Lock()
	defer x.mu.Unlock()
	_, known := x.st.Sources[key]
	if !known && src == nil {
		return
	}
	if reset {
		x.st.drop(key)
	}
	for _, p := range ps {
		x.st.add(p)
	}
	if src != nil {
		x.st.Sources[key] = src
	} else {
		delete(x.st.Sources, key)
	}
	x.st.compact()
	x.dirty = true
}
