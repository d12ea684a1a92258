package natsbus

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/nanobot-go/nanobot/bus"
)

// RunDispatcherFeed consumes the outbound stream into Outbound until ctx
// ends, through one durable consumer shared by every channels instance (only
// the lease holder runs it). A message is acknowledged by Delivered; one
// left unacknowledged by an instance that died is redelivered after AckWait.
// It reconnects with backoff when the consumer fails.
func (b *Bus) RunDispatcherFeed(ctx context.Context) error {
	if !b.startGoroutine() {
		return ErrClosed
	}
	defer b.wg.Done()
	ctx, cancel := b.untilClosed(ctx)
	defer cancel()
	log := b.log.With("consumer", "dispatcher")
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		cons, err := b.js.CreateOrUpdateConsumer(cctx, b.outStream, jetstream.ConsumerConfig{
			Durable: "dispatcher", AckPolicy: jetstream.AckExplicitPolicy, AckWait: b.opts.AckWait,
			MaxAckPending: 4096, DeliverPolicy: jetstream.DeliverAllPolicy,
		})
		ccancel()
		if err == nil {
			err = b.feedOutbound(ctx, cons)
		}
		if ctx.Err() != nil {
			return nil
		}
		log.Warn("outbound consumer failed; retrying", "err", err, "backoff", backoff)
		sleep(ctx, jitter(backoff))
		backoff = min(backoff*2, 5*time.Second)
	}
	return nil
}

func (b *Bus) feedOutbound(ctx context.Context, cons jetstream.Consumer) error {
	return consume(ctx, cons, 256, b.log, "dropping undecodable outbound message", func(msg jetstream.Msg, seq uint64, m bus.Outbound) (bool, error) {
		m.ID = "out." + strconv.FormatUint(seq, 10)
		b.track(m.ID, &pending{msg: msg, part: -1})
		select {
		case b.out <- m:
			return true, nil
		case <-ctx.Done():
			b.untrack(m.ID)
			return false, nil
		}
	})
}

// untilClosed returns a context that also ends when the bus closes.
func (b *Bus) untilClosed(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-b.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// consume pulls cons's messages (batch at a time) until ctx ends (nil) or
// the pull fails, decoding each as a T. A message without metadata or that
// does not decode is terminated (logged as undecodable); the others go to
// handle with their stream sequence, which stops the pull by returning
// false or an error.
func consume[T any](ctx context.Context, cons jetstream.Consumer, batch int, log *slog.Logger, undecodable string,
	handle func(msg jetstream.Msg, seq uint64, m T) (bool, error)) error {
	it, err := cons.Messages(jetstream.PullMaxMessages(batch))
	if err != nil {
		return err
	}
	defer it.Stop()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		meta, err := msg.Metadata()
		if err != nil {
			_ = msg.Term()
			continue
		}
		var m T
		if err := json.Unmarshal(msg.Data(), &m); err != nil {
			log.Error(undecodable, "seq", meta.Sequence.Stream, "err", err)
			_ = msg.Term()
			continue
		}
		if more, err := handle(msg, meta.Sequence.Stream, m); !more || err != nil {
			return err
		}
	}
}
