package channeltest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// inbox records deliveries and denies one sender, like relay.Gate does
// for a sender not on allowFrom.
type inbox struct {
	deny string
	// hold blocks Deliver of a message containing holdText until released
	// (closed); entered is closed when such a Deliver began.
	holdText      string
	hold, entered chan struct{}

	mu        sync.Mutex
	delivered []bus.Inbound
	denied    []bus.Inbound
}

func newInbox(deny string) *inbox { return &inbox{deny: deny} }

// Deliver implements channels.Inbox.
func (in *inbox) Deliver(ctx context.Context, m bus.Inbound) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if in.holdText != "" && strings.Contains(m.Content, in.holdText) {
		in.mu.Lock()
		entered := in.entered
		in.entered = nil
		in.mu.Unlock()
		if entered != nil {
			close(entered)
			select {
			case <-in.hold:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if m.SenderID == in.deny {
		in.denied = append(in.denied, m)
		return channels.ErrDenied
	}
	in.delivered = append(in.delivered, m)
	return nil
}

// find returns the first delivered (or denied) message whose content
// contains text.
func (in *inbox) find(text string, denied bool) (bus.Inbound, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	list := in.delivered
	if denied {
		list = in.denied
	}
	for _, m := range list {
		if strings.Contains(m.Content, text) {
			return m, true
		}
	}
	return bus.Inbound{}, false
}

func (in *inbox) all() []bus.Inbound {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]bus.Inbound(nil), in.delivered...)
}

// recorder is a slog.Handler that keeps every record.
type recorder struct {
	mu      sync.Mutex
	records []record
}

type record struct {
	level slog.Level
	msg   string
	attrs string
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s", a)
		return true
	})
	r.add(rec.Level, rec.Message, b.String())
	return nil
}

// WithAttrs keeps attributes in a shared record list: the suite reads one
// list whatever loggers the adapter derives.
func (r *recorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &derived{root: r, attrs: attrs}
}

func (r *recorder) WithGroup(string) slog.Handler { return r }

func (r *recorder) add(level slog.Level, msg, attrs string) {
	r.mu.Lock()
	r.records = append(r.records, record{level: level, msg: msg, attrs: attrs})
	r.mu.Unlock()
}

// count returns how many records at level or above were logged.
func (r *recorder) count(level slog.Level) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rec := range r.records {
		if rec.level >= level {
			n++
		}
	}
	return n
}

func (r *recorder) dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, rec := range r.records {
		fmt.Fprintf(&b, "  %s %s%s\n", rec.level, rec.msg, rec.attrs)
	}
	return b.String()
}

// derived is a recorder handler with attributes.
type derived struct {
	root  *recorder
	attrs []slog.Attr
}

func (d *derived) Enabled(context.Context, slog.Level) bool { return true }

func (d *derived) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	for _, a := range d.attrs {
		fmt.Fprintf(&b, " %s", a)
	}
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s", a)
		return true
	})
	d.root.add(rec.Level, rec.Message, b.String())
	return nil
}

func (d *derived) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &derived{root: d.root, attrs: append(append([]slog.Attr(nil), d.attrs...), attrs...)}
}

func (d *derived) WithGroup(string) slog.Handler { return d }
