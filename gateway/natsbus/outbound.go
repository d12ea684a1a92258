package natsbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
//
// Replies of a chat reach Outbound in stream order. The consumer lets many
// messages wait for their acknowledgement, so a message whose delivery
// went nowhere (a feed stopped with it buffered or with its dispatcher, a
// delivery lost on a reconnect) would come back only after AckWait, behind
// newer ones: seen as replies 0, 1, 3, 2 after a NATS restart. So the
// consumer is created afresh whenever the feed starts or a delivery was
// lost (see consume): it starts again at the oldest unacknowledged message
// (the stream is a work queue). Messages this run handed out and still
// waiting for Delivered are then not handed out twice.
func (b *Bus) RunDispatcherFeed(ctx context.Context) error {
	if !b.startGoroutine() {
		return ErrClosed
	}
	defer b.wg.Done()
	ctx, cancel := b.untilClosed(ctx)
	defer cancel()
	b.mu.Lock()
	b.feedRuns++
	run := b.feedRuns
	b.mu.Unlock()
	log := b.log.With("consumer", "dispatcher")
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		cons, err := freshConsumer(cctx, b.js, b.outStream, jetstream.ConsumerConfig{
			Durable: "dispatcher", AckPolicy: jetstream.AckExplicitPolicy, AckWait: b.opts.AckWait,
			MaxAckPending: 4096, DeliverPolicy: jetstream.DeliverAllPolicy,
		})
		ccancel()
		if err == nil {
			err = b.feedOutbound(ctx, cons, run)
		}
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, errDeliveryGap) {
			log.Info("restarting the outbound consumer from its oldest unacknowledged message", "err", err)
			continue
		}
		log.Warn("outbound consumer failed; retrying", "err", err, "backoff", backoff)
		sleep(ctx, jitter(backoff))
		backoff = min(backoff*2, 5*time.Second)
	}
	return nil
}

func (b *Bus) feedOutbound(ctx context.Context, cons jetstream.Consumer, run uint64) error {
	return consume(ctx, cons, 256, b.log, "dropping undecodable outbound message", func(msg jetstream.Msg, seq uint64, m bus.Outbound) (bool, error) {
		m.ID = "out." + strconv.FormatUint(seq, 10)
		if b.redelivered(m.ID, run, msg) {
			return true, nil
		}
		pm := &pending{msg: msg, part: -1, gen: run}
		b.track(m.ID, pm)
		select {
		case b.out <- m:
			return true, nil
		case <-ctx.Done():
			b.untrack(m.ID, pm)
			return false, nil
		}
	})
}

// freshConsumer deletes the durable consumer cfg.Durable of stream and
// creates it again, so that it delivers from the oldest unacknowledged
// message, numbering its deliveries from 1.
func freshConsumer(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	if err := js.DeleteConsumer(ctx, stream, cfg.Durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("reset consumer: %w", err)
	}
	return js.CreateConsumer(ctx, stream, cfg)
}

// errDeliveryGap is a delivery of a consumer that never reached consume:
// lost on a reconnect, or pulled by an instance that no longer owns the
// consumer.
var errDeliveryGap = errors.New("a delivery was lost")

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
//
// cons must be new (see freshConsumer): its deliveries, redeliveries
// included, are numbered from 1, and consume is their only reader. A
// number skipped is a delivery that never arrived; the message after it
// is not handled, and consume returns errDeliveryGap so that the caller
// recreates the consumer rather than let the lost message be redelivered
// after AckWait, behind its successors.
func consume[T any](ctx context.Context, cons jetstream.Consumer, batch int, log *slog.Logger, undecodable string,
	handle func(msg jetstream.Msg, seq uint64, m T) (bool, error)) error {
	it, err := cons.Messages(jetstream.PullMaxMessages(batch))
	if err != nil {
		return err
	}
	defer it.Stop()
	var delivered uint64
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
		if meta.Sequence.Consumer != delivered+1 {
			return fmt.Errorf("%w: delivery %d after %d", errDeliveryGap, meta.Sequence.Consumer, delivered)
		}
		delivered = meta.Sequence.Consumer
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
