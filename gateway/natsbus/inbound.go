package natsbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/nanobot-go/nanobot/bus"
)

// partState is a partition this instance holds the lease of.
type partState struct {
	rev       uint64
	renewed   time.Time
	gen       uint64
	releasing bool
	stop      context.CancelFunc
	stopped   chan struct{}
}

func partKey(p int) string { return "part." + strconv.Itoa(p) }

// owns reports whether partition p is still held in generation gen.
func (b *Bus) owns(p int, gen uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.owned[p]
	return st != nil && st.gen == gen
}

// Owned returns the partitions this instance holds, sorted.
func (b *Bus) Owned() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]int, 0, len(b.owned))
	for p := range b.owned {
		out = append(out, p)
	}
	sort.Ints(out)
	return out
}

// RunWorker consumes inbound partitions into Inbound until ctx ends. It
// announces this instance as a worker, takes its share of the partition
// leases (partitions / live workers, rounded up), renews them, and hands
// back partitions beyond its share once their messages are done, so load
// spreads as workers come and go. When a lease is lost (NATS unreachable
// for 2/3 of LeaseTTL, or taken over) the partition's messages still
// running are revoked: revoke is called with their session keys so the
// caller stops those turns, and they are neither marked done nor
// acknowledged.
//
// When ctx ends, fetching stops but the leases are kept (running turns may
// still finish and be acknowledged) until Close releases them.
func (b *Bus) RunWorker(ctx context.Context, revoke func(sessionKey string)) error {
	return b.RunWorkerWith(ctx, WorkerHooks{Revoke: revoke})
}

// WorkerHooks connect RunWorkerWith to the agent loop.
type WorkerHooks struct {
	// Submit, when set, receives the messages instead of Inbound. It is
	// called with the partition's fence held, so a message is either
	// submitted before its partition is lost (and then revoked) or not at
	// all; it must not block (agent.Loop.Submit queues and returns).
	Submit func(m bus.Inbound)
	// Revoke stops the turn of a session whose partition was lost.
	Revoke func(sessionKey string)
}

// RunWorkerWith is RunWorker with hooks.
func (b *Bus) RunWorkerWith(ctx context.Context, hooks WorkerHooks) error {
	revoke := hooks.Revoke
	if !b.startGoroutine() {
		return ErrClosed
	}
	defer b.wg.Done()
	ctx, cancel := b.untilClosed(ctx)
	defer cancel()
	b.mu.Lock()
	if b.owned == nil {
		b.owned = map[int]*partState{}
	}
	b.revoke = revoke
	b.submit = hooks.Submit
	b.mu.Unlock()
	memberKey := "member." + b.opts.Role + "." + sanitize(b.opts.Instance)
	// Renewals run on their own, until Close (turns still running after
	// ctx ended are not taken over): a balance round can wait seconds on
	// NATS (listing the members while it is away), and a lease not renewed
	// meanwhile would expire unnoticed while this instance goes on feeding
	// its partition, next to the new owner.
	b.wg.Add(1) // under our own registration, so Close cannot have started waiting
	go func() { defer b.wg.Done(); b.keepLeases() }()
	t := time.NewTicker(b.renewEvery())
	defer t.Stop()
	for {
		b.balance(ctx, memberKey)
		select {
		case <-ctx.Done():
			b.stopFetching()
			return nil
		case <-t.C:
		}
	}
}

// keepLeases renews the held partition leases every LeaseTTL/3 until
// Close.
func (b *Bus) keepLeases() {
	b.everyUntilClosed(b.renewEvery(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), b.renewEvery())
		b.renewAll(ctx)
		cancel()
	})
}

// balance is one round of membership, release and acquisition (renewals
// run on their own: keepLeases).
func (b *Bus) balance(ctx context.Context, memberKey string) {
	rctx, cancel := context.WithTimeout(ctx, b.renewEvery())
	defer cancel()
	if _, err := b.leases.Put(rctx, memberKey, []byte(b.memberInfo())); err != nil && ctx.Err() == nil {
		b.log.Warn("worker: cannot announce membership", "err", err)
	}
	workers := 1
	if keys, err := b.memberKeys(rctx); err == nil {
		n := 0
		for _, k := range keys {
			if strings.HasPrefix(k, "member.worker.") || strings.HasPrefix(k, "member.all.") {
				n++
			}
		}
		workers = max(n, 1)
	}
	share := (b.opts.Partitions + workers - 1) / workers

	b.mu.Lock()
	var active []int
	for p, st := range b.owned {
		if !st.releasing {
			active = append(active, p)
		}
	}
	b.mu.Unlock()
	sort.Ints(active)
	// Over our share: stop fetching the extras; their leases go once their
	// messages are done (finishReleases).
	for len(active) > share {
		p := active[len(active)-1]
		active = active[:len(active)-1]
		b.mu.Lock()
		st := b.owned[p]
		st.releasing = true
		b.mu.Unlock()
		st.stop()
		b.log.Info("worker: handing back partition over our share", "partition", p, "share", share)
	}
	b.finishReleases()
	if len(active) >= share || ctx.Err() != nil {
		return
	}
	for _, p := range rand.Perm(b.opts.Partitions) {
		if len(active) >= share {
			break
		}
		b.mu.Lock()
		_, mine := b.owned[p]
		b.mu.Unlock()
		if mine {
			continue
		}
		rev, ok, err := b.acquire(rctx, partKey(p))
		if err != nil || !ok {
			continue
		}
		b.startPartition(ctx, p, rev)
		active = append(active, p)
	}
}

func (b *Bus) memberInfo() string {
	owned := b.Owned()
	info, _ := json.Marshal(Member{Instance: b.opts.Instance, Role: b.opts.Role, Partitions: owned, Seen: time.Now().UTC()})
	return string(info)
}

func (b *Bus) memberKeys(ctx context.Context) ([]string, error) {
	l, err := b.leases.ListKeysFiltered(ctx, "member.>")
	if err != nil {
		return nil, err
	}
	defer func() { _ = l.Stop() }()
	var keys []string
	for k := range l.Keys() {
		keys = append(keys, k)
	}
	return keys, nil
}

// renewAll renews every held partition lease; a failed or stale one is
// lost.
func (b *Bus) renewAll(ctx context.Context) {
	b.mu.Lock()
	parts := make(map[int]uint64, len(b.owned))
	for p, st := range b.owned {
		parts[p] = st.rev
	}
	b.mu.Unlock()
	var wg sync.WaitGroup
	for p, rev := range parts {
		wg.Go(func() { b.renewOne(ctx, p, rev) })
	}
	wg.Wait()
}

func (b *Bus) renewOne(ctx context.Context, p int, rev uint64) {
	{
		next, err := b.renew(ctx, partKey(p), rev)
		if errors.Is(err, jetstream.ErrKeyExists) {
			// A renewal whose reply was lost (or came after its deadline) may
			// have landed: the key still names us, at a newer revision. Look
			// with a context of its own: the round's may be nearly spent, and
			// a lookup that cannot finish must not pass for a lost lease.
			gctx, cancel := context.WithTimeout(context.Background(), b.renewEvery())
			e, gerr := b.leases.Get(gctx, partKey(p))
			cancel()
			switch {
			case gerr == nil && string(e.Value()) == b.opts.Instance:
				next, err = e.Revision(), nil
			case gerr != nil && !errors.Is(gerr, jetstream.ErrKeyNotFound):
				err = fmt.Errorf("lease check: %w", gerr) // unknown: lost only once stale
			}
		}
		b.mu.Lock()
		st := b.owned[p]
		if st == nil || st.rev != rev {
			b.mu.Unlock()
			return
		}
		if err == nil {
			st.rev, st.renewed = next, time.Now()
			b.mu.Unlock()
			return
		}
		stale := time.Since(st.renewed) > b.staleAfter()
		b.mu.Unlock()
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyNotFound) || stale {
			b.lose(p, err)
		}
	}
}

// lose drops partition p after its lease was lost: fetching stops and the
// messages still running are revoked.
func (b *Bus) lose(p int, why error) {
	b.fence.Lock()
	defer b.fence.Unlock()
	b.mu.Lock()
	st := b.owned[p]
	if st == nil {
		b.mu.Unlock()
		return
	}
	delete(b.owned, p)
	var sessions []string
	for id, pm := range b.inflight {
		if pm.part == p {
			sessions = append(sessions, pm.sess)
			delete(b.inflight, id)
		}
	}
	revoke := b.revoke
	b.mu.Unlock()
	st.stop()
	b.log.Warn("worker: partition lease lost; revoking its running turns", "partition", p, "turns", len(sessions), "err", why)
	if revoke != nil {
		for _, s := range sessions {
			revoke(s)
		}
	}
}

// finishReleases deletes the leases of released partitions whose messages
// are all done.
func (b *Bus) finishReleases() {
	b.fence.Lock()
	defer b.fence.Unlock()
	b.mu.Lock()
	busy := map[int]bool{}
	for _, pm := range b.inflight {
		busy[pm.part] = true
	}
	type rel struct {
		p   int
		rev uint64
		st  *partState
	}
	var free []rel
	for p, st := range b.owned {
		select {
		case <-st.stopped:
		default:
			continue // its feed may still submit a message
		}
		if st.releasing && !busy[p] {
			free = append(free, rel{p, st.rev, st})
			delete(b.owned, p)
		}
	}
	b.mu.Unlock()
	for _, r := range free {
		<-r.st.stopped
		b.release(partKey(r.p), r.rev)
	}
}

// stopFetching stops every partition's consumer (leases stay).
func (b *Bus) stopFetching() {
	b.mu.Lock()
	var sts []*partState
	for _, st := range b.owned {
		sts = append(sts, st)
	}
	b.mu.Unlock()
	for _, st := range sts {
		st.stop()
		<-st.stopped
	}
}

// releaseAll gives back every lease (Close).
func (b *Bus) releaseAll() {
	b.mu.Lock()
	owned := b.owned
	b.owned = nil
	b.mu.Unlock()
	for p, st := range owned {
		st.stop()
		<-st.stopped
		b.release(partKey(p), st.rev)
	}
	if b.opts.Role != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = b.leases.Delete(ctx, "member."+b.opts.Role+"."+sanitize(b.opts.Instance))
	}
}

func (b *Bus) startPartition(ctx context.Context, p int, rev uint64) {
	pctx, stop := context.WithCancel(ctx)
	b.mu.Lock()
	b.gen++
	st := &partState{rev: rev, renewed: time.Now(), gen: b.gen, stop: stop, stopped: make(chan struct{})}
	b.owned[p] = st
	b.mu.Unlock()
	if !b.startGoroutine() {
		stop()
		close(st.stopped)
		return
	}
	go func() {
		defer b.wg.Done()
		defer close(st.stopped)
		b.consumePartition(pctx, p, st.gen)
	}()
	b.log.Info("worker: partition acquired", "partition", p, "revision", rev)
}

// consumePartition feeds partition p into Inbound until pctx ends. The
// consumer is created afresh so that it starts at the oldest message not
// yet acknowledged (the stream is a work queue: acknowledged messages are
// gone), in stream order; messages a previous owner finished but could not
// acknowledge are found in the done bucket and skipped. It is created
// afresh again whenever a delivery was lost (see consume), and messages
// still being worked on are then not handed out twice.
func (b *Bus) consumePartition(pctx context.Context, p int, gen uint64) {
	name := "in-" + strconv.Itoa(p)
	subj := b.inSubj + "." + strconv.Itoa(p)
	log := b.log.With("partition", p)
	backoff := 100 * time.Millisecond
	for pctx.Err() == nil {
		cctx, cancel := context.WithTimeout(pctx, 5*time.Second)
		cons, err := freshConsumer(cctx, b.js, b.inStream, jetstream.ConsumerConfig{
			Durable: name, FilterSubject: subj, AckPolicy: jetstream.AckExplicitPolicy,
			AckWait: b.opts.AckWait, MaxAckPending: 1024, DeliverPolicy: jetstream.DeliverAllPolicy,
		})
		cancel()
		if err != nil {
			log.Warn("worker: cannot create partition consumer; retrying", "err", err)
			sleep(pctx, jitter(backoff))
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		err = b.feed(pctx, cons, p, gen)
		if errors.Is(err, errDeliveryGap) {
			log.Info("worker: restarting the partition consumer from its oldest unacknowledged message", "err", err)
			continue
		}
		if err != nil && pctx.Err() == nil {
			log.Warn("worker: partition consumer failed; restarting", "err", err)
			sleep(pctx, jitter(backoff))
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
	}
}

func (b *Bus) feed(pctx context.Context, cons jetstream.Consumer, p int, gen uint64) error {
	return consume(pctx, cons, 64, b.log.With("partition", p), "worker: dropping undecodable inbound message", func(msg jetstream.Msg, seq uint64, m bus.Inbound) (bool, error) {
		m.ID = strconv.Itoa(p) + "." + strconv.FormatUint(seq, 10)
		if b.redelivered(m.ID, gen, msg) {
			return true, nil
		}
		doneKey := inboundDedupKey(m)
		if doneKey == "" {
			doneKey = "seq-" + strconv.FormatUint(seq, 10)
		}
		doneKey = "in." + doneKey
		gctx, cancel := context.WithTimeout(pctx, 5*time.Second)
		_, err := b.done.Get(gctx, doneKey)
		cancel()
		switch {
		case err == nil:
			b.log.Info("worker: skipping a message already answered", "partition", p, "seq", seq)
			b.skipped(m.Key(), p, gen, seq)
			_ = msg.Ack()
			return true, nil
		case !errors.Is(err, jetstream.ErrKeyNotFound):
			_ = msg.Nak()
			return false, fmt.Errorf("done check: %w", err)
		}
		pm := &pending{msg: msg, part: p, gen: gen, key: doneKey, sess: m.Key(), seq: seq}
		b.track(m.ID, pm)
		if !b.hand(pctx, m, p, gen) {
			b.untrack(m.ID, pm)
			return false, nil
		}
		return true, nil
	})
}

// Member describes an instance in the member list.
type Member struct {
	Instance   string    `json:"instance"`
	Role       string    `json:"role"`
	Partitions []int     `json:"partitions"`
	Seen       time.Time `json:"seen"`
}

// errNotConnected answers a question NATS would have to answer while it
// is out of reach, at once instead of after a timeout.
var errNotConnected = errors.New("natsbus: not connected to NATS")

// Members lists the instances that announced themselves within the last
// lease period (workers through RunWorker, others through Announce).
func (b *Bus) Members(ctx context.Context) ([]Member, error) {
	if !b.js.Conn().IsConnected() {
		return nil, errNotConnected
	}
	keys, err := b.memberKeys(ctx)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return nil, nil
		}
		return nil, err
	}
	var out []Member
	for _, k := range keys {
		e, err := b.leases.Get(ctx, k)
		if err != nil {
			continue
		}
		var m Member
		if json.Unmarshal(e.Value(), &m) == nil {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Instance < out[j].Instance })
	return out, nil
}

// Announce keeps this instance in the member list until ctx ends (for
// instances that do not run RunWorker).
func (b *Bus) Announce(ctx context.Context) {
	key := "member." + b.opts.Role + "." + sanitize(b.opts.Instance)
	t := time.NewTicker(b.renewEvery())
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, b.renewEvery())
		_, _ = b.leases.Put(pctx, key, []byte(b.memberInfo()))
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// hand passes m to the loop: through Submit under the fence (only while
// the partition is still ours), or through Inbound.
func (b *Bus) hand(pctx context.Context, m bus.Inbound, p int, gen uint64) bool {
	b.mu.Lock()
	submit := b.submit
	b.mu.Unlock()
	if submit != nil {
		b.fence.Lock()
		defer b.fence.Unlock()
		if !b.owns(p, gen) || pctx.Err() != nil {
			return false
		}
		submit(m)
		return true
	}
	select {
	case b.in <- m:
		return true
	case <-pctx.Done():
		return false
	}
}
