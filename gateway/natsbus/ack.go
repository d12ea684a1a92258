// What consumers say back about a message: Done and Admit for inbound
// turns (acknowledge, or hand back for another worker), Delivered for
// replies, and the progress acknowledgements of long turns (keepAlive).

package natsbus

import (
	"context"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nats-io/nats.go/jetstream"
)

// Done acknowledges an inbound message once its turn is saved and its
// replies published. With replay set (the process is stopping, or saving
// failed because NATS was unreachable) the message is handed back for
// another worker instead; the same happens when a reply of its session
// could not be published. Messages of a partition this instance no longer
// owns are left alone: the new owner replays them and skips those marked
// done.
func (b *Bus) Done(m bus.Inbound, replay bool) {
	b.mu.Lock()
	p, ok := b.inflight[m.ID]
	var msg jetstream.Msg
	if ok {
		if b.pubFailed[p.sess] {
			delete(b.pubFailed, p.sess)
			replay = true
		}
		p.settling = true
		msg = p.msg
	}
	b.mu.Unlock()
	if !ok {
		return // not ours, or its partition was lost (see RunWorker)
	}
	// The entry stays until the message is settled, so a partition being
	// handed back is released only after its done marker and ack.
	defer b.untrack(m.ID, p)
	if !b.owns(p.part, p.gen) {
		b.log.Info("partition moved while its message ran; leaving it to the new owner", "partition", p.part)
		return
	}
	if replay {
		b.mu.Lock()
		h := b.handedBack[p.sess]
		if h == nil || h.part != p.part || h.gen != p.gen {
			h = &handedBack{part: p.part, gen: p.gen, seqs: map[uint64]bool{}}
			b.handedBack[p.sess] = h
		}
		h.seqs[p.seq] = true
		b.mu.Unlock()
		_ = msg.Nak()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), MaxRetry)
	defer cancel()
	if err := Retry(ctx, func(ctx context.Context) error {
		_, err := b.done.Put(ctx, p.key, []byte(b.opts.Instance))
		return err
	}); err != nil {
		b.log.Warn("recording a done message failed; it may be replayed", "err", err)
	}
	// Retry the acknowledgement only while the partition is still ours: a
	// new owner's consumer replaces ours, and the done marker covers it.
	actx, acancel := context.WithTimeout(ctx, b.opts.AckWait)
	defer acancel()
	if err := Retry(actx, func(ctx context.Context) error {
		if !b.owns(p.part, p.gen) {
			return nil
		}
		return msg.DoubleAck(ctx)
	}); err != nil {
		b.log.Warn("acknowledging inbound failed; it may be replayed (and skipped as done)", "err", err)
	}
}

// Admit reports whether inbound m may start its turn now (the agent loop
// asks before each turn). It may not while an earlier message of its
// session was handed back by Done and has not come round again: m is then
// handed back too (the loop calls Done with replay), and waits in turn.
// Every message handed back is waited for, not only the first: the
// hand-backs are separate Naks, and JetStream may deliver a new message of
// the session between two of them (seen as replies 0, 2, 1 after a NATS
// restart). A handed-back message clears its wait when it is admitted, or
// when it turns out to be done already.
func (b *Bus) Admit(m bus.Inbound) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.inflight[m.ID]
	if !ok || p.part < 0 {
		return true
	}
	h, ok := b.handedBack[p.sess]
	if !ok {
		return true
	}
	if h.part != p.part || h.gen != p.gen {
		delete(b.handedBack, p.sess) // from an earlier ownership of the partition
		return true
	}
	for seq := range h.seqs {
		if seq < p.seq {
			// Counted as handed back now, not at Done: the earlier one may
			// come round before Done, and must not end the wait for m.
			h.seqs[p.seq] = true
			return false
		}
	}
	b.cameRound(p.sess, h, p.seq)
	return true
}

// skipped clears the wait for the message of session sess at seq when it
// is found answered already and skipped.
func (b *Bus) skipped(sess string, part int, gen, seq uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if h, ok := b.handedBack[sess]; ok && h.part == part && h.gen == gen {
		b.cameRound(sess, h, seq)
	}
}

// cameRound ends the wait for the message at seq. b.mu is held.
func (b *Bus) cameRound(sess string, h *handedBack, seq uint64) {
	delete(h.seqs, seq)
	if len(h.seqs) == 0 {
		delete(b.handedBack, sess)
	}
}

// Delivered acknowledges an outbound message the platform accepted (or
// refused for good).
func (b *Bus) Delivered(m bus.Outbound) {
	if m.ID == "" {
		return
	}
	b.mu.Lock()
	p, ok := b.inflight[m.ID]
	var msg jetstream.Msg
	if ok {
		delete(b.inflight, m.ID)
		msg = p.msg
	}
	b.mu.Unlock()
	if ok {
		if err := msg.Ack(); err != nil {
			b.log.Warn("acknowledging outbound failed; it may be sent again", "err", err)
		}
	}
}

// keepAlive sends progress acknowledgements for the messages being worked
// on, so long turns are not redelivered while they run.
func (b *Bus) keepAlive() {
	b.everyUntilClosed(b.opts.AckWait/3, func() {
		b.mu.Lock()
		msgs := make([]jetstream.Msg, 0, len(b.inflight))
		for _, p := range b.inflight {
			msgs = append(msgs, p.msg)
		}
		b.mu.Unlock()
		for _, m := range msgs {
			_ = m.InProgress()
		}
	})
}
