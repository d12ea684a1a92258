package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/journal"
	"github.com/nanobot-go/nanobot/gateway/natsbus"
	"github.com/nanobot-go/nanobot/gateway/outbox"
	"github.com/nanobot-go/nanobot/gateway/relay"
	"github.com/nanobot-go/nanobot/internal/wal"
)

// delivery is the single-process gateway's durable reply path and its
// storage guard: replies go through the outbox (gateway/outbox) before the
// bus, the dispatcher reports progress to it, unfinished replies are
// delivered again at start, and a journal that cannot write (disk full)
// turns into an unacknowledged platform message, one notice to the sender
// and an unready /readyz until writing works again.
//
// In cluster mode (no journal) it passes everything through: JetStream
// holds the outbound queue there (see natsbus and its Delivered ack).
//
// Safe for concurrent use.
type delivery struct {
	jr     *journal.Journal // nil in cluster mode
	ob     *outbox.Outbox   // nil in cluster mode
	replay []bus.Outbound
	maxAge time.Duration
	notify func(ctx context.Context, m bus.Outbound) error
	log    *slog.Logger

	mu      sync.Mutex
	noticed map[string]time.Time // chat -> last storage notice
}

// storageNoticeEvery rate-limits the storage notice per chat.
const storageNoticeEvery = 10 * time.Minute

// storageNotice is what a sender is told while messages cannot be stored.
const storageNotice = "⚠️ I can't store new messages right now (the server is out of storage). " +
	"I'll answer once that is fixed; if I don't, please send your message again later."

// openDelivery opens the outbox next to the journal. notify sends the
// storage notice (best-effort, not through the outbox: the disk is full).
func openDelivery(cfg *configs.Config, paths configs.Paths, jr *journal.Journal, open wal.OpenFunc, notify func(context.Context, bus.Outbound) error, m *Metrics, log *slog.Logger) (*delivery, error) {
	d := &delivery{jr: jr, notify: notify, log: log.With("component", "delivery"), noticed: map[string]time.Time{}}
	d.maxAge = time.Duration(cfg.Channels.OutboxMaxAgeH) * time.Hour
	if d.maxAge <= 0 {
		d.maxAge = relay.DefaultMaxAge
	}
	if jr == nil {
		return d, nil
	}
	ob, pending, err := outbox.Open(filepath.Join(paths.State, "outbox.jsonl"), outbox.Options{Log: log, Open: open, OnFinished: m.OutboxFinished})
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	d.ob, d.replay = ob, pending
	m.OutboxPending(ob.Pending)
	return d, nil
}

// Close closes the outbox.
func (d *delivery) Close() error {
	if d.ob == nil {
		return nil
	}
	return d.ob.Close()
}

// publisher returns where the agent publishes: the outbox, then next.
func (d *delivery) publisher(next queues) interface {
	PublishOutbound(ctx context.Context, m bus.Outbound) error
} {
	if d.ob == nil {
		return next
	}
	return recorder{d: d, next: next}
}

type recorder struct {
	d    *delivery
	next queues
}

// PublishOutbound records a reply durably (before the agent's turn ends
// and the inbox marks it done), then queues it for the dispatcher. A final
// reply to a turn answered before a crash is dropped, and so is the rest of
// what that turn's new run says (its stream would show the answer again).
// When the outbox cannot write, the reply still goes out, without the
// guarantees.
func (r recorder) PublishOutbound(ctx context.Context, m bus.Outbound) error {
	rec, send, err := r.d.ob.Record(m)
	switch {
	case err != nil:
		r.d.log.Error("outbox: recording a reply failed; sending it without a record", "channel", m.Channel, "err", err)
	case !send:
		if outbox.Durable(m) {
			r.d.log.Info("reply to a turn answered before a restart not sent again", "channel", m.Channel, "chat_id", m.ChatID, "turn", m.Turn)
		}
		return nil
	}
	return r.next.PublishOutbound(ctx, rec)
}

// configure makes the dispatcher deliver through the outbox.
func (d *delivery) configure(c *relay.DispatcherConfig) {
	if d.ob == nil {
		return
	}
	c.Delivery, c.MaxAge = d.ob, d.maxAge
}

// resume queues the replies a previous run left undelivered, before any
// new reply, so each chat gets them in order.
func (d *delivery) resume(ctx context.Context, b queues) error {
	for _, m := range d.replay {
		d.log.Info("delivering a reply left undelivered", "channel", m.Channel, "chat_id", m.ChatID)
		if err := b.PublishOutbound(ctx, m); err != nil {
			return fmt.Errorf("gateway: resume outbox: %w", err)
		}
	}
	d.replay = nil
	return nil
}

// pending counts replies not yet delivered.
func (d *delivery) pending() int {
	if d.ob == nil {
		return 0
	}
	return d.ob.Pending()
}

// storageProblem says why messages cannot be stored now, or "".
func (d *delivery) storageProblem() string {
	if d.jr != nil {
		if err := d.jr.Err(); err != nil {
			return "storage: inbox: " + err.Error()
		}
	}
	if d.ob != nil {
		if err := d.ob.Err(); err != nil {
			return "storage: outbox: " + err.Error()
		}
	}
	return ""
}

// accept hands m to the inbox. A message that cannot be stored now is not
// taken: the error wraps channels.ErrUnavailable, so the adapter holds it
// unacknowledged and offers it again for as long as that lasts, instead of
// giving up after a few attempts. That is a journal that cannot write (the
// sender hears about it once per storageNoticeEvery) and, in cluster mode,
// a NATS server that does not answer while the caller still waits.
func (d *delivery) accept(ctx context.Context, in inbox, m bus.Inbound) error {
	err := in.Accept(ctx, m)
	if err == nil {
		return nil
	}
	if ctx.Err() == nil && natsbus.IsTransient(err) {
		return fmt.Errorf("%w: %w", channels.ErrUnavailable, err)
	}
	var we *wal.WriteError
	if !errors.As(err, &we) {
		return err
	}
	key := m.Channel + "\x00" + m.ChatID
	d.mu.Lock()
	last, seen := d.noticed[key]
	tell := !seen || time.Since(last) >= storageNoticeEvery
	if tell {
		d.noticed[key] = time.Now()
		for k, t := range d.noticed { // forget chats told long ago
			if time.Since(t) >= storageNoticeEvery {
				delete(d.noticed, k)
			}
		}
	}
	d.mu.Unlock()
	if tell {
		notice := bus.Outbound{Channel: m.Channel, ChatID: m.ChatID, Kind: bus.KindMessage, Content: storageNotice,
			ReplyTo: m.MessageID, Metadata: m.Metadata, ThreadID: m.ThreadID, SessionKey: m.Key(), IsError: true}
		if nerr := d.notify(ctx, notice); nerr != nil {
			d.log.Warn("storage notice not sent", "channel", m.Channel, "err", nerr)
		}
	}
	return fmt.Errorf("%w: %w", channels.ErrUnavailable, err)
}
