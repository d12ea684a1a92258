package natsbus

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/nanobot-go/nanobot/gateway/bus"
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
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-b.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
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
	it, err := cons.Messages(jetstream.PullMaxMessages(256))
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
		var m bus.Outbound
		if err := json.Unmarshal(msg.Data(), &m); err != nil {
			b.log.Error("dropping undecodable outbound message", "seq", meta.Sequence.Stream, "err", err)
			_ = msg.Term()
			continue
		}
		m.ID = "out." + strconv.FormatUint(meta.Sequence.Stream, 10)
		b.track(m.ID, &pending{msg: msg, part: -1})
		select {
		case b.out <- m:
		case <-ctx.Done():
			b.untrack(m.ID)
			return nil
		}
	}
}
