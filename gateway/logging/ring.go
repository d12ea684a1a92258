package logging

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Ring keeps the last log lines in memory for the workbench's log view.
// It is fed after redaction (see Options.Ring), so it holds nothing the
// log itself would not. It is safe for concurrent use.
type Ring struct {
	mu    sync.Mutex
	lines []Line
	next  int
	full  bool
}

// Line is one log record as text.
type Line struct {
	Time  time.Time `json:"time"`
	Level string    `json:"level"`
	Text  string    `json:"text"`

	level slog.Level
}

// NewRing keeps the last n lines (at least 1).
func NewRing(n int) *Ring {
	return &Ring{lines: make([]Line, max(n, 1))}
}

// Write takes one record formatted by a text handler (one Write per
// record).
func (r *Ring) Write(p []byte) (int, error) {
	text := string(bytes.TrimRight(p, "\n"))
	l := Line{Time: time.Now(), Text: text, Level: "INFO"}
	if i := strings.Index(text, "level="); i >= 0 {
		f := text[i+len("level="):]
		if j := strings.IndexByte(f, ' '); j >= 0 {
			f = f[:j]
		}
		if err := l.level.UnmarshalText([]byte(f)); err == nil {
			l.Level = l.level.String()
		}
	}
	r.mu.Lock()
	r.lines[r.next] = l
	r.next = (r.next + 1) % len(r.lines)
	r.full = r.full || r.next == 0
	r.mu.Unlock()
	return len(p), nil
}

// Lines returns up to n of the newest lines at min level or above, oldest
// first.
func (r *Ring) Lines(min slog.Level, n int) []Line {
	r.mu.Lock()
	defer r.mu.Unlock()
	var all []Line
	if r.full {
		all = append(all, r.lines[r.next:]...)
	}
	all = append(all, r.lines[:r.next]...)
	out := []Line{}
	for i := len(all) - 1; i >= 0 && len(out) < n; i-- {
		if all[i].level >= min {
			out = append(out, all[i])
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// tee sends every record to two handlers.
type tee struct{ a, b slog.Handler }

func (t tee) Enabled(ctx context.Context, l slog.Level) bool {
	return t.a.Enabled(ctx, l) || t.b.Enabled(ctx, l)
}

func (t tee) Handle(ctx context.Context, rec slog.Record) error {
	var err error
	if t.a.Enabled(ctx, rec.Level) {
		err = t.a.Handle(ctx, rec.Clone())
	}
	if t.b.Enabled(ctx, rec.Level) {
		_ = t.b.Handle(ctx, rec)
	}
	return err
}

func (t tee) WithAttrs(attrs []slog.Attr) slog.Handler {
	return tee{a: t.a.WithAttrs(attrs), b: t.b.WithAttrs(attrs)}
}

func (t tee) WithGroup(name string) slog.Handler {
	return tee{a: t.a.WithGroup(name), b: t.b.WithGroup(name)}
}
