package natsbus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/bus/bustest"
	"github.com/nanobot-go/nanobot/gateway/natsbus/natstest"
	"github.com/nanobot-go/nanobot/internal/syncbuf"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// testOpts are short timings so takeovers happen within a test.
func testOpts(instance string) Options {
	return Options{Instance: instance, Role: "worker", Partitions: 8, LeaseTTL: 900 * time.Millisecond, AckWait: 3 * time.Second}
}

type node struct {
	*Bus
	nc     *nats.Conn
	cancel context.CancelFunc
	runs   sync.WaitGroup
}

// start opens a bus on its own connection and runs its consumers.
func start(t *testing.T, srv *natstest.Server, o Options, worker, dispatcher bool) *node {
	t.Helper()
	nc, err := nats.Connect(srv.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(context.Background(), nc, o)
	if err != nil {
		nc.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{Bus: b, nc: nc, cancel: cancel}
	if worker {
		n.runs.Go(func() { _ = b.RunWorker(ctx, nil) })
	}
	if dispatcher {
		n.runs.Go(func() { _ = b.RunDispatcherFeed(ctx) })
	}
	t.Cleanup(n.stop)
	return n
}

// stop shuts the node down cleanly.
func (n *node) stop() {
	n.cancel()
	n.runs.Wait()
	n.Close()
	n.nc.Close()
}

// crash drops the node's connection without releasing anything.
func (n *node) crash() {
	n.nc.Close()
	n.cancel()
	n.runs.Wait()
	n.Close()
}

func TestConformance(t *testing.T) {
	srv := natstest.Start(t)
	i := 0
	bustest.Run(t, bustest.Impl{
		New: func(t *testing.T) bustest.Queue {
			i++
			o := testOpts("conf")
			o.Prefix = fmt.Sprint("conf", i) // a fresh bot per test
			return start(t, srv, o, true, true).Bus
		},
		Done:      func(q bustest.Queue, m bus.Inbound) { q.(*Bus).Done(m, false) },
		Delivered: func(q bustest.Queue, m bus.Outbound) { q.(*Bus).Delivered(m) },
	})
}

func recv(t *testing.T, ch <-chan bus.Inbound, within time.Duration) (bus.Inbound, bool) {
	t.Helper()
	select {
	case m, ok := <-ch:
		return m, ok
	case <-time.After(within):
		return bus.Inbound{}, false
	}
}

func TestDuplicatePublishSuppressed(t *testing.T) {
	srv := natstest.Start(t)
	n := start(t, srv, testOpts("a"), true, true)
	ctx := context.Background()
	m := bus.Inbound{Channel: "telegram", ChatID: "1", MessageID: "77", Content: "hi"}
	for range 3 {
		if err := n.PublishInbound(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	second := m
	second.MessageID, second.Content = "78", "next"
	if err := n.PublishInbound(ctx, second); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hi", "next"} {
		got, ok := recv(t, n.Inbound(), 10*time.Second)
		if !ok || got.Content != want {
			t.Fatalf("got %q (%v), want %q", got.Content, ok, want)
		}
		n.Done(got, false)
	}
	if got, ok := recv(t, n.Inbound(), 300*time.Millisecond); ok {
		t.Errorf("duplicate delivered: %+v", got)
	}
	// A final reply to one message is published once, however often a
	// replayed turn sends it.
	out := bus.Outbound{Channel: "telegram", ChatID: "1", Kind: bus.KindStreamEnd, Final: true, ReplyTo: "77", Content: "answer"}
	for range 2 {
		if err := n.PublishOutbound(ctx, out); err != nil {
			t.Fatal(err)
		}
	}
	<-n.Outbound()
	select {
	case m := <-n.Outbound():
		t.Errorf("second final reply delivered: %+v", m)
	case <-time.After(300 * time.Millisecond):
	}
}

// A message taken by a worker that dies before it is done is delivered to
// the worker that takes the partition over; a done one is not.
func TestCrashedWorkersMessagesReplayed(t *testing.T) {
	srv := natstest.Start(t)
	a := start(t, srv, testOpts("a"), true, false)
	ctx := context.Background()
	for i, text := range []string{"finished", "interrupted"} {
		if err := a.PublishInbound(ctx, bus.Inbound{Channel: "c", ChatID: "s", MessageID: fmt.Sprint(i), Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	m1, ok := recv(t, a.Inbound(), 10*time.Second)
	if !ok || m1.Content != "finished" {
		t.Fatalf("first = %+v", m1)
	}
	a.Done(m1, false)
	m2, ok := recv(t, a.Inbound(), 10*time.Second)
	if !ok || m2.Content != "interrupted" {
		t.Fatalf("second = %+v", m2)
	}
	a.crash()

	b := start(t, srv, testOpts("b"), true, false)
	got, ok := recv(t, b.Inbound(), 10*time.Second)
	if !ok || got.Content != "interrupted" {
		t.Fatalf("after takeover got %+v (%v), want the interrupted message", got, ok)
	}
	b.Done(got, false)
	if extra, ok := recv(t, b.Inbound(), 500*time.Millisecond); ok {
		t.Errorf("replayed a finished message: %+v", extra)
	}
}

// A message whose turn finished (marked done) but whose acknowledgement was
// lost is skipped by the next owner.
func TestDoneButUnackedSkipped(t *testing.T) {
	srv := natstest.Start(t)
	a := start(t, srv, testOpts("a"), true, false)
	ctx := context.Background()
	if err := a.PublishInbound(ctx, bus.Inbound{Channel: "c", ChatID: "s", MessageID: "1", Content: "answered"}); err != nil {
		t.Fatal(err)
	}
	m, ok := recv(t, a.Inbound(), 10*time.Second)
	if !ok {
		t.Fatal("no message")
	}
	a.mu.Lock()
	key := a.inflight[m.ID].key
	a.mu.Unlock()
	if _, err := a.done.Put(ctx, key, []byte("a")); err != nil {
		t.Fatal(err)
	}
	a.crash() // after the done marker, before the ack
	b := start(t, srv, testOpts("b"), true, false)
	if err := b.PublishInbound(ctx, bus.Inbound{Channel: "c", ChatID: "s", MessageID: "2", Content: "new"}); err != nil {
		t.Fatal(err)
	}
	got, ok := recv(t, b.Inbound(), 10*time.Second)
	if !ok || got.Content != "new" {
		t.Fatalf("got %+v, want only the new message", got)
	}
}

func TestPartitionsSpreadAndMove(t *testing.T) {
	srv := natstest.Start(t)
	a := start(t, srv, testOpts("a"), true, false)
	b := start(t, srv, testOpts("b"), true, false)
	waitfor.True(t, "partitions split between two workers", func() bool {
		pa, pb := a.Owned(), b.Owned()
		return len(pa) == 4 && len(pb) == 4 && disjoint(pa, pb)
	})
	a.crash()
	waitfor.True(t, "survivor owns every partition", func() bool { return len(b.Owned()) == 8 })
}

func TestHoldOneAtATime(t *testing.T) {
	srv := natstest.Start(t)
	a := start(t, srv, testOpts("a"), false, false)
	b := start(t, srv, testOpts("b"), false, false)
	var mu sync.Mutex
	running, maxRunning := map[string]bool{}, 0
	hold := func(n *node, name string) {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go n.Hold(ctx, "channels", func(ctx context.Context) {
			mu.Lock()
			running[name] = true
			maxRunning = max(maxRunning, len(running))
			mu.Unlock()
			<-ctx.Done()
			mu.Lock()
			delete(running, name)
			mu.Unlock()
		})
	}
	hold(a, "a")
	waitfor.True(t, "a holds the lease", func() bool { return a.Holds("channels") })
	refusals := &refusalCounter{KeyValue: b.leases}
	b.leases = refusals // before b's Hold starts: nothing else of b's uses it yet
	hold(b, "b")
	// b must stay a standby while a is alive: b tries every LeaseTTL/3
	// (jittered), so eight refusals span well over two lease periods, in
	// which a's lease would have expired had a not renewed it.
	waitfor.True(t, "b refused the lease eight times", func() bool { return refusals.n.Load() >= 8 })
	if b.Holds("channels") {
		t.Fatal("standby took the lease from a live holder")
	}
	a.crash()
	start := time.Now()
	waitfor.True(t, "standby takes over", func() bool { return b.Holds("channels") })
	if took := time.Since(start); took > 3*a.opts.LeaseTTL {
		t.Errorf("takeover took %v, lease TTL %v", took, a.opts.LeaseTTL)
	}
	mu.Lock()
	defer mu.Unlock()
	if maxRunning != 1 {
		t.Errorf("%d holders ran at once", maxRunning)
	}
}

func disjoint(a, b []int) bool {
	seen := map[int]bool{}
	for _, p := range a {
		seen[p] = true
	}
	for _, p := range b {
		if seen[p] {
			return false
		}
	}
	return true
}

func TestLockExcludes(t *testing.T) {
	srv := natstest.Start(t)
	a := start(t, srv, testOpts("a"), false, false)
	b := start(t, srv, testOpts("b"), false, false)
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for i := range 6 {
		n := a
		if i%2 == 1 {
			n = b
		}
		wg.Go(func() {
			_, unlock, err := n.Lock(context.Background(), "memory")
			if err != nil {
				t.Error(err)
				return
			}
			if v := inside.Add(1); v > most.Load() {
				most.Store(v)
			}
			time.Sleep(30 * time.Millisecond)
			inside.Add(-1)
			unlock()
		})
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Errorf("%d holders inside the lock at once", most.Load())
	}
	// A dead holder's lock expires.
	_, deadUnlock, err := a.Lock(context.Background(), "held")
	if err != nil {
		t.Fatal(err)
	}
	a.crash()
	// The dead holder's renewals stop with its connection; unlocking
	// after the test ends its renewal goroutine (the release fails on the
	// closed connection, as a dead process's would not happen at all).
	t.Cleanup(deadUnlock)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, unlock, err := b.Lock(ctx, "held")
	if err != nil {
		t.Fatalf("lock of a dead holder never expired: %v", err)
	}
	unlock()
}

// A holder whose lease is lost hears of it: its context ends, with
// ErrLockLost as the cause, before another instance takes the lock (here
// the key is deleted, as its expiry during a NATS outage would).
func TestLockLossEndsHolderContext(t *testing.T) {
	srv := natstest.Start(t)
	a := start(t, srv, testOpts("a"), false, false)
	b := start(t, srv, testOpts("b"), false, false)
	held, release, err := a.Lock(context.Background(), "memory")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := a.leases.Delete(context.Background(), "lock.memory"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the holder's context did not end after its lease was lost")
	}
	if got := context.Cause(held); !errors.Is(got, ErrLockLost) {
		t.Errorf("cause %v, want ErrLockLost", got)
	}
	// The lost lock is free for another holder, and releasing it late
	// does not take it from that holder.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bHeld, bRelease, err := b.Lock(ctx, "memory")
	if err != nil {
		t.Fatalf("lock after a loss: %v", err)
	}
	defer bRelease()
	release()
	release() // twice is fine
	if _, err := a.leases.Get(context.Background(), "lock.memory"); err != nil {
		t.Errorf("the first holder's late release removed the second's lock: %v", err)
	}
	if bHeld.Err() != nil {
		t.Errorf("second holder's context ended: %v", context.Cause(bHeld))
	}
}

// The held context ends with the caller's context and on release, and a
// holder that keeps its lock across several lease periods is not told it
// lost it.
func TestLockHeldContext(t *testing.T) {
	srv := natstest.Start(t)
	a := start(t, srv, testOpts("a"), false, false)
	ctx, cancel := context.WithCancel(context.Background())
	held, release, err := a.Lock(ctx, "memory")
	if err != nil {
		t.Fatal(err)
	}
	// Renewals keep the lock through three lease periods; the test waits
	// for them, not for time: the lease revision moves.
	e, err := a.leases.Get(context.Background(), "lock.memory")
	if err != nil {
		t.Fatal(err)
	}
	first := e.Revision()
	waitfor.True(t, "three renewals", func() bool {
		e, err := a.leases.Get(context.Background(), "lock.memory")
		return err == nil && e.Revision() >= first+3
	})
	if held.Err() != nil {
		t.Fatalf("held ended while renewed: %v", context.Cause(held))
	}
	cancel()
	<-held.Done()
	release()
	waitfor.True(t, "the lock released", func() bool {
		_, err := a.leases.Get(context.Background(), "lock.memory")
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})
}

// refusalCounter counts the lease creations the bucket refused because the
// key was held: the standby's attempts, seen from the outside.
type refusalCounter struct {
	jetstream.KeyValue
	n atomic.Int32
}

func (r *refusalCounter) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	rev, err := r.KeyValue.Create(ctx, key, value, opts...)
	if errors.Is(err, jetstream.ErrKeyExists) {
		r.n.Add(1)
	}
	return rev, err
}

// A message handed back for redelivery (its reply could not be published
// while NATS was away) holds back the later messages of its session: they
// are handed back too instead of running, and all come again in order, so
// the earlier message is never answered after its successors.
func TestHandedBackMessageComesBeforeItsSuccessors(t *testing.T) {
	srv := natstest.Start(t)
	a := start(t, srv, testOpts("a"), true, false)
	ctx := context.Background()
	other := bus.Inbound{Channel: "c", ChatID: "other", MessageID: "o", Content: "other"}
	for i := range 3 {
		if err := a.PublishInbound(ctx, bus.Inbound{Channel: "c", ChatID: "s", MessageID: fmt.Sprint(i), Content: fmt.Sprint("m", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.PublishInbound(ctx, other); err != nil {
		t.Fatal(err)
	}
	got := map[string]bus.Inbound{}
	for range 4 {
		m, ok := recv(t, a.Inbound(), 10*time.Second)
		if !ok {
			t.Fatal("not all messages delivered")
		}
		got[m.Content] = m
	}
	if !a.Admit(got["m0"]) {
		t.Fatal("the first message was refused")
	}
	a.Done(got["m0"], true) // its reply could not be published: replay it
	for _, c := range []string{"m1", "m2"} {
		if a.Admit(got[c]) {
			t.Fatalf("%s may run while m0, before it, waits for redelivery", c)
		}
		a.Done(got[c], true)
	}
	if !a.Admit(got["other"]) {
		t.Fatal("another session's message was held back")
	}
	a.Done(got["other"], false)

	var order []string
	for range 3 {
		m, ok := recv(t, a.Inbound(), 10*time.Second)
		if !ok {
			t.Fatalf("redelivered so far %v, want m0 m1 m2", order)
		}
		if !a.Admit(m) {
			t.Fatalf("redelivered %s refused (order so far %v)", m.Content, order)
		}
		order = append(order, m.Content)
		a.Done(m, false)
	}
	if !slices.Equal(order, []string{"m0", "m1", "m2"}) {
		t.Fatalf("redelivered in order %v, want m0 m1 m2", order)
	}
}

// A message handed back while an earlier one of its session is on its way
// round keeps the wait going after the earlier one came back: a new
// message of the session delivered in between (JetStream may deliver it
// before a later hand-back reaches the server) waits too.
func TestEveryHandedBackMessageIsWaitedFor(t *testing.T) {
	srv := natstest.Start(t)
	a := start(t, srv, testOpts("a"), true, false)
	ctx := context.Background()
	publish := func(i int) {
		t.Helper()
		if err := a.PublishInbound(ctx, bus.Inbound{Channel: "c", ChatID: "s", MessageID: fmt.Sprint(i), Content: fmt.Sprint("m", i)}); err != nil {
			t.Fatal(err)
		}
	}
	next := func(want string) bus.Inbound {
		t.Helper()
		m, ok := recv(t, a.Inbound(), 10*time.Second)
		if !ok || m.Content != want {
			t.Fatalf("got %q (%v), want %s", m.Content, ok, want)
		}
		return m
	}
	publish(0)
	publish(1)
	m0, m1 := next("m0"), next("m1")
	if !a.Admit(m0) {
		t.Fatal("m0 refused")
	}
	a.Done(m0, true)
	if a.Admit(m1) {
		t.Fatal("m1 may run while m0, before it, waits for redelivery")
	}
	// m0 comes round before m1's hand-back (Done) reached the server.
	if m0 = next("m0"); !a.Admit(m0) {
		t.Fatal("redelivered m0 refused")
	}
	a.Done(m0, false)
	publish(2)
	m2 := next("m2")
	if a.Admit(m2) {
		t.Fatal("m2 may run while m1, before it, waits for redelivery")
	}
	a.Done(m1, true)
	a.Done(m2, true)
	var order []string
	for len(order) < 2 {
		m, ok := recv(t, a.Inbound(), 10*time.Second)
		if !ok {
			t.Fatalf("admitted so far %v, want m1 m2", order)
		}
		if !a.Admit(m) {
			a.Done(m, true) // waits for its turn again
			continue
		}
		order = append(order, m.Content)
		a.Done(m, false)
	}
	if !slices.Equal(order, []string{"m1", "m2"}) {
		t.Fatalf("admitted in order %v, want m1 m2", order)
	}
}

func recvOut(t *testing.T, ch <-chan bus.Outbound) bus.Outbound {
	t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			t.Fatal("outbound closed")
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no outbound message")
	}
	return bus.Outbound{}
}

// feed runs RunDispatcherFeed until the returned stop is called.
func feed(n *node) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.RunDispatcherFeed(ctx) }()
	return func() { cancel(); <-done }
}

// A reply handed to a dispatcher that stopped before sending it (its
// channels lease was lost) comes first when the feed starts again, not
// after AckWait behind the replies published meanwhile.
func TestRestartedFeedStartsAtOldestUndelivered(t *testing.T) {
	srv := natstest.Start(t)
	o := testOpts("a")
	o.AckWait = time.Minute // a redelivery by timeout would come too late to pass
	n := start(t, srv, o, false, false)
	ctx := context.Background()
	say := func(text string) {
		t.Helper()
		if err := n.PublishOutbound(ctx, bus.Outbound{Channel: "c", ChatID: "1", Kind: bus.KindMessage, Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	say("r0")
	stop := feed(n)
	if got := recvOut(t, n.Outbound()); got.Content != "r0" {
		t.Fatalf("got %q, want r0", got.Content)
	}
	stop() // the dispatcher went with it: r0 was never sent
	say("r1")
	stop = feed(n)
	defer stop()
	for _, want := range []string{"r0", "r1"} {
		got := recvOut(t, n.Outbound())
		if got.Content != want {
			t.Fatalf("got %q, want %s", got.Content, want)
		}
		n.Delivered(got)
	}
	waitfor.True(t, "the outbound stream drained", func() bool { _, out := n.Depth(); return out == 0 })
}

// A consumer recreated while a reply waits at the dispatcher (here deleted
// from outside, as a reset after a lost delivery does) delivers the reply
// again; it is not handed out twice, and Delivered acknowledges it
// through the new consumer.
func TestRecreatedConsumerDoesNotRepeatHeldReplies(t *testing.T) {
	srv := natstest.Start(t)
	o := testOpts("a")
	o.AckWait = time.Minute
	n := start(t, srv, o, false, false)
	ctx := context.Background()
	say := func(text string) {
		t.Helper()
		if err := n.PublishOutbound(ctx, bus.Outbound{Channel: "c", ChatID: "1", Kind: bus.KindMessage, Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	defer feed(n)()
	say("r0")
	r0 := recvOut(t, n.Outbound())
	if err := n.js.DeleteConsumer(ctx, n.outStream, "dispatcher"); err != nil {
		t.Fatal(err)
	}
	say("r1")
	if got := recvOut(t, n.Outbound()); got.Content != "r1" {
		t.Fatalf("got %q after the consumer was recreated, want r1 (r0 is still at the dispatcher)", got.Content)
	} else {
		n.Delivered(got)
	}
	n.Delivered(r0)
	waitfor.True(t, "the outbound stream drained", func() bool { _, out := n.Depth(); return out == 0 })
}

// stallingLister is a lease bucket whose member listing hangs until
// released, as it did while NATS was away (stopping the lister waits for
// a consumer deletion that cannot be answered).
type stallingLister struct {
	jetstream.KeyValue
	stall chan struct{}
}

func (s *stallingLister) ListKeysFiltered(ctx context.Context, filters ...string) (jetstream.KeyLister, error) {
	<-s.stall
	return s.KeyValue.ListKeysFiltered(ctx, filters...)
}

// Partition leases are renewed while a balance round is stuck: otherwise
// they expire unnoticed, and the partition is fed here and by its next
// owner at once.
func TestLeasesRenewedWhileBalanceIsStuck(t *testing.T) {
	srv := natstest.Start(t)
	o := testOpts("a")
	o.Partitions = 1
	n := start(t, srv, o, false, false)
	kv := n.leases
	stuck := &stallingLister{KeyValue: kv, stall: make(chan struct{})}
	n.leases = stuck // before RunWorker: nothing of n's uses it yet
	defer close(stuck.stall)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n.runs.Go(func() { _ = n.RunWorker(ctx, nil) })
	// The first round acquires nothing yet: it waits on the listing
	// before acquiring. Let it through once, then stall the next round.
	stuck.stall <- struct{}{}
	waitfor.True(t, "partition 0 acquired", func() bool { return slices.Equal(n.Owned(), []int{0}) })
	e, err := kv.Get(context.Background(), partKey(0))
	if err != nil {
		t.Fatal(err)
	}
	first := e.Revision()
	waitfor.True(t, "the partition lease renewed while balancing is stuck", func() bool {
		e, err := kv.Get(context.Background(), partKey(0))
		return err == nil && e.Revision() >= first+4 && string(e.Value()) == "a"
	})
	if !slices.Equal(n.Owned(), []int{0}) {
		t.Errorf("owned %v, want [0]", n.Owned())
	}
}

// A message published while NATS is away is refused (the caller tells its
// sender "not taken, retry") and never sent later from the client's
// reconnect buffer, to be answered besides the sender's retry.
func TestInboundRefusedWhileAwayIsNotSentLater(t *testing.T) {
	srv := natstest.Start(t)
	n := start(t, srv, testOpts("a"), true, false)
	srv.Stop()
	waitfor.True(t, "the client to notice", func() bool { return !n.nc.IsConnected() })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	away := bus.Inbound{Channel: "webhook", ChatID: "P", Content: "while away"} // no message id to dedupe on
	if err := n.PublishInbound(ctx, away); err == nil {
		t.Fatal("a publish while NATS was away succeeded")
	}
	srv.Restart()
	waitfor.Within(t, "the client back", 15*time.Second, func() bool { return n.nc.IsConnected() })
	after := away
	after.Content = "after"
	if err := n.PublishInbound(context.Background(), after); err != nil {
		t.Fatal(err)
	}
	got, ok := recv(t, n.Inbound(), 10*time.Second)
	if !ok || got.Content != "after" {
		t.Fatalf("first message after the outage %q (%v), want only the one sent after", got.Content, ok)
	}
	n.Done(got, false)
}

// An instance started with another partition count than the cluster's
// streams were set up with says so.
func TestOtherPartitionCountWarned(t *testing.T) {
	srv := natstest.Start(t)
	start(t, srv, testOpts("a"), false, false)
	var logs syncbuf.Buffer
	o := testOpts("b")
	o.Partitions = 4
	o.Log = slog.New(slog.NewTextHandler(&logs, nil))
	start(t, srv, o, false, false)
	if !strings.Contains(logs.String(), "cluster.partitions differs") || !strings.Contains(logs.String(), "cluster=8") {
		t.Errorf("no warning about 4 partitions in a cluster of 8:\n%s", logs.String())
	}
	var quiet syncbuf.Buffer
	same := testOpts("c")
	same.Partitions = 4 // the stream now says 4
	same.Log = slog.New(slog.NewTextHandler(&quiet, nil))
	start(t, srv, same, false, false)
	if strings.Contains(quiet.String(), "differs") {
		t.Errorf("warned with the same count:\n%s", quiet.String())
	}
}
