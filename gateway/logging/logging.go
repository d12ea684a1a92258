// Package logging builds the process logger: log/slog with a text or JSON
// handler on stderr, and a redacting handler in front of it so that
// credentials never reach a log line, whichever component logs them.
//
// Concurrency: the logger New returns and a Ring are safe for concurrent
// use: slog's handlers serialize their writes to w, and a Ring takes its own
// lock.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"

	"github.com/nanobot-go/nanobot/internal/redact"
)

// Options configure New.
type Options struct {
	// Level is "debug", "info", "warn" or "error" (default info).
	Level string
	// Format is "text" (default) or "json".
	Format string
	// Secrets are exact values to redact wherever they appear.
	Secrets []string
	// Ring, when set, also receives every record (after redaction, at the
	// same level) for the workbench's log view.
	Ring *Ring
}

// ParseLevel converts a level name to a slog.Level.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if s == "" {
		return slog.LevelInfo, nil
	}
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("log level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// New returns a logger writing to w, and the redactor it masks secrets
// with (redact.New over o.Secrets). Share that redactor with everything
// else that must not leak secrets, and Add tokens learnt at run time to it.
func New(w io.Writer, o Options) (*slog.Logger, *redact.Redactor, error) {
	lvl, err := ParseLevel(o.Level)
	if err != nil {
		return nil, nil, err
	}
	hopts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler
	switch o.Format {
	case "", "text":
		h = slog.NewTextHandler(w, hopts)
	case "json":
		h = slog.NewJSONHandler(w, hopts)
	default:
		return nil, nil, fmt.Errorf("log format %q: want text or json", o.Format)
	}
	if o.Ring != nil {
		h = tee{a: h, b: slog.NewTextHandler(o.Ring, hopts)}
	}
	r := redact.New(o.Secrets...)
	return slog.New(&redactHandler{next: h, r: r}), r, nil
}

const mask = redact.Mask

var secretAttr = regexp.MustCompile(`(?i)(api_?key|token|secret|password|authorization|cookie)`)

// redactHandler masks secrets in the message and every string attribute, and
// masks attributes whose key names a credential outright.
type redactHandler struct {
	next slog.Handler
	r    *redact.Redactor
}

func (h *redactHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	if secretAttr.MatchString(a.Key) && v.Kind() != slog.KindGroup {
		if v.Kind() == slog.KindString && v.String() == "" {
			return a
		}
		return slog.String(a.Key, mask)
	}
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.String(v.String()))
	case slog.KindGroup:
		attrs := v.Group()
		red := make([]any, len(attrs))
		for i, g := range attrs {
			red[i] = h.attr(g)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.r.String(err.Error()))
		}
		return slog.String(a.Key, h.r.String(fmt.Sprint(v.Any())))
	default:
		return slog.Attr{Key: a.Key, Value: v}
	}
}

func (h *redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.attr(a)
	}
	return &redactHandler{next: h.next.WithAttrs(red), r: h.r}
}

func (h *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{next: h.next.WithGroup(name), r: h.r}
}
