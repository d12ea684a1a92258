// Package natsbus is the bus on NATS JetStream, for running one bot on
// several machines: the inbound queue is a stream partitioned by a hash of
// the session key (subjects <prefix>.in.<partition>), the outbound queue is
// a second stream, and leases, duplicate markers and membership live in
// JetStream key-value buckets. The in-memory bus stays the default;
// this package is used only when the config has a cluster section.
//
// Delivery is at least once, end to end:
//
//   - PublishInbound returns only once JetStream stored the message, so a
//     channel adapter acknowledges its platform only after that. A message
//     with a platform id is published with a Nats-Msg-Id derived from it,
//     so a platform redelivery inside the duplicate window is dropped by
//     the server.
//   - An inbound message is acknowledged by Done, which the agent loop calls
//     once the turn is saved and its replies are published; Done first
//     records the message as done in a bucket, and the consumer skips
//     messages it finds there (a redelivery after a crash between the two).
//   - An outbound message is acknowledged by Delivered, which the
//     dispatcher calls once the platform accepted the send (or refused it
//     for good). A final reply carries a Nats-Msg-Id derived from the
//     message it answers, so a turn replayed after a crash does not answer
//     twice inside the duplicate window.
//
// Ordering and ownership: the messages of one session are in one partition
// and every partition is consumed by one worker at a time, the holder of
// its lease in the lease bucket (see RunWorker); a worker whose renewals
// fail for 2/3 of LeaseTTL stops feeding the partition before the lease can
// expire. Every feed (a partition's, the dispatcher's) reads a consumer it
// created afresh, so it starts at the oldest unacknowledged message, and
// starts over the same way when a delivery was lost (see consume): no
// message is handed out after one that followed it in the stream. A message
// handed back for redelivery holds back its session's later messages
// (Admit). From there the agent loop keeps a session's messages in order,
// and the dispatcher a chat's replies.
//
// Concurrency: all methods are safe for concurrent use, Close included (any
// number of times).
package natsbus

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/option"
)

// Options configure a Bus. The zero value is usable.
type Options struct {
	// Prefix names the streams and buckets (upper-cased) and starts every
	// subject (lower-cased), so several bots can share one NATS server.
	// Default "nanobot".
	Prefix string
	// Partitions is how many inbound partitions there are (default 16). It
	// bounds how many workers can share the load; all instances of a bot
	// must agree on it.
	Partitions int
	// Replicas is the stream and bucket replication factor in a NATS
	// cluster (default 1).
	Replicas int
	// AckWait is how long JetStream waits for an acknowledgement before it
	// redelivers (default 30 s). Messages being worked on are kept alive
	// with progress acknowledgements, so it only matters after a crash.
	AckWait time.Duration
	// LeaseTTL is how long a lease (partition, channels, cron) outlives its
	// holder (default 10 s): the time a dead instance's work waits before
	// another takes it over.
	LeaseTTL time.Duration
	// DuplicateWindow is how long JetStream remembers published message ids
	// (default 2 min).
	DuplicateWindow time.Duration
	// DoneTTL is how long done markers are kept (default 24 h).
	DoneTTL time.Duration
	// Instance names this process in leases and status (default host name
	// plus a random suffix).
	Instance string
	// Role is reported in the member list ("all", "channels", "worker").
	Role string
	Log  *slog.Logger
}

func (o *Options) defaults() {
	o.Prefix = cmp.Or(o.Prefix, "nanobot")
	option.Positive(&o.Partitions, 16)
	option.Positive(&o.Replicas, 1)
	option.Positive(&o.AckWait, 30*time.Second)
	option.Positive(&o.LeaseTTL, 10*time.Second)
	option.Positive(&o.DuplicateWindow, 2*time.Minute)
	option.Positive(&o.DoneTTL, 24*time.Hour)
	if o.Instance == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "nanobot"
		}
		o.Instance = sanitize(host) + "-" + randomID()[:6]
	}
	o.Role = cmp.Or(o.Role, "all")
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// Bus is the JetStream bus of one process.
type Bus struct {
	opts Options
	log  *slog.Logger
	nc   *nats.Conn
	js   jetstream.JetStream

	inStream, outStream string
	inSubj, outSubj     string
	leases              jetstream.KeyValue
	done                jetstream.KeyValue

	in  chan bus.Inbound
	out chan bus.Outbound

	mu        sync.Mutex
	closed    bool
	closing   chan struct{}
	closeOnce sync.Once
	inflight  map[string]*pending // bus.Inbound.ID / bus.Outbound.ID -> message
	owned     map[int]*partState  // partitions held
	gen       uint64              // ownership generations handed out
	revoke    func(sessionKey string)
	submit    func(m bus.Inbound)
	// fence orders handing a message to the loop against losing its
	// partition (see WorkerHooks.Submit).
	fence sync.Mutex
	held  map[string]bool // named leases held (Hold)
	waits map[string]int  // attempts at a named lease another instance held
	// pubFailed marks sessions whose reply could not be published: the
	// message being worked on is replayed instead of acknowledged.
	pubFailed map[string]bool
	// handedBack holds, per session, the messages handed back for another
	// delivery that have not come round yet: later messages of the session
	// wait behind them (see Admit), so a redelivered message is never
	// answered after its successors.
	handedBack map[string]*handedBack
	feedRuns   uint64 // RunDispatcherFeed calls so far
	wg         sync.WaitGroup
}

// handedBack is what Done gave back to JetStream of one session, in one
// ownership of its partition.
type handedBack struct {
	part int
	gen  uint64
	seqs map[uint64]bool // stream sequences
}

// pending is a delivered, not yet acknowledged message.
type pending struct {
	// msg is the latest delivery of the message: a consumer recreated
	// while the message is worked on delivers it again, and only the new
	// delivery can be acknowledged. Guarded by Bus.mu.
	msg  jetstream.Msg
	part int    // -1 for outbound
	gen  uint64 // inbound: the partition's ownership generation; outbound: the feed run
	key  string // done marker key, inbound only
	sess string // session key, inbound only
	seq  uint64 // stream sequence, inbound only
	// settling is set once Done or Delivered started to settle it: a
	// delivery after that is a new one (guarded by Bus.mu).
	settling bool
}

// ErrClosed is bus.ErrClosed: Publish after Close.
var ErrClosed = bus.ErrClosed

// Open creates (or updates) the streams and buckets of the bot on the
// connection nc and returns the bus. Consumption starts with RunWorker
// (inbound) and RunDispatcherFeed (outbound).
func Open(ctx context.Context, nc *nats.Conn, o Options) (*Bus, error) {
	o.defaults()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("natsbus: %w", err)
	}
	upper := strings.ToUpper(sanitize(o.Prefix))
	lower := strings.ToLower(sanitize(o.Prefix))
	b := &Bus{
		opts: o, log: o.Log.With("component", "natsbus", "instance", o.Instance), nc: nc, js: js,
		inStream: upper + "_IN", outStream: upper + "_OUT",
		inSubj: lower + ".in", outSubj: lower + ".out",
		in: make(chan bus.Inbound), out: make(chan bus.Outbound),
		closing: make(chan struct{}), inflight: map[string]*pending{}, pubFailed: map[string]bool{}, handedBack: map[string]*handedBack{},
	}
	if err := b.checkPartitions(ctx); err != nil {
		return nil, err
	}
	for _, sc := range []jetstream.StreamConfig{
		{Name: b.inStream, Subjects: []string{b.inSubj + ".>"}, Storage: jetstream.FileStorage, Replicas: o.Replicas,
			Retention: jetstream.WorkQueuePolicy, Duplicates: o.DuplicateWindow,
			Metadata: map[string]string{partitionsMeta: strconv.Itoa(o.Partitions)}},
		{Name: b.outStream, Subjects: []string{b.outSubj + ".>"}, Storage: jetstream.FileStorage, Replicas: o.Replicas,
			Retention: jetstream.WorkQueuePolicy, Duplicates: o.DuplicateWindow},
	} {
		if err := ensureStream(ctx, js, sc); err != nil {
			return nil, fmt.Errorf("natsbus: stream %s: %w", sc.Name, err)
		}
	}
	if b.leases, err = EnsureKeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket: upper + "_LEASES", TTL: o.LeaseTTL, History: 1, Storage: jetstream.FileStorage, Replicas: o.Replicas,
	}); err != nil {
		return nil, fmt.Errorf("natsbus: lease bucket: %w", err)
	}
	if b.done, err = EnsureKeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket: upper + "_DONE", TTL: o.DoneTTL, History: 1, Storage: jetstream.FileStorage, Replicas: o.Replicas,
	}); err != nil {
		return nil, fmt.Errorf("natsbus: done bucket: %w", err)
	}
	b.wg.Go(b.keepAlive)
	return b, nil
}

// JetStream returns the JetStream context (the session store and the
// locks share the connection).
func (b *Bus) JetStream() jetstream.JetStream { return b.js }

// Options returns the options in effect (defaults filled in).
func (b *Bus) Options() Options { return b.opts }

// Partition returns the inbound partition of a session key.
func (b *Bus) Partition(sessionKey string) int { return partitionOf(sessionKey, b.opts.Partitions) }

func partitionOf(key string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

// PublishInbound stores m in its session's partition. It returns once
// JetStream acknowledged the write (the message is durable), the context's
// error, or ErrClosed.
func (b *Bus) PublishInbound(ctx context.Context, m bus.Inbound) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	m.ID = ""
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("natsbus: encode inbound: %w", err)
	}
	subj := b.inSubj + "." + strconv.Itoa(b.Partition(m.Key()))
	// One id for every attempt of this call: an attempt whose answer was
	// lost to a disconnect is stored once however often it is retried.
	id := "in-call-" + rand.Text()
	if k := inboundDedupKey(m); k != "" {
		id = "in-" + k
	}
	opts := []jetstream.PublishOpt{jetstream.WithMsgID(id)}
	if err := Retry(ctx, func(ctx context.Context) error {
		if !b.js.Conn().IsConnected() {
			// Not into the client's reconnect buffer: that would send it
			// after this call gave up and the sender was told it was not
			// taken (a 503), to be answered besides the sender's retry.
			return nats.ErrConnectionReconnecting
		}
		_, err := b.js.Publish(ctx, subj, data, opts...)
		return err
	}); err != nil {
		return fmt.Errorf("natsbus: publish inbound: %w", err)
	}
	return nil
}

// PublishOutbound stores m for the dispatcher.
func (b *Bus) PublishOutbound(ctx context.Context, m bus.Outbound) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	m.ID = ""
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("natsbus: encode outbound: %w", err)
	}
	var opts []jetstream.PublishOpt
	if m.Final && m.ReplyTo != "" && !m.IsError {
		// One final answer per message: a replayed turn's answer is dropped.
		opts = append(opts, jetstream.WithMsgID("out-"+digest(m.Channel, m.ChatID, m.ReplyTo, m.SessionKey)))
	}
	if err := Retry(ctx, func(ctx context.Context) error {
		_, err := b.js.Publish(ctx, b.outSubj+"."+sanitize(m.Channel), data, opts...)
		return err
	}); err != nil {
		// The turn that said this must not be acknowledged: Done replays it.
		b.mu.Lock()
		b.pubFailed[m.SessionKey] = true
		b.mu.Unlock()
		return fmt.Errorf("natsbus: publish outbound: %w", err)
	}
	return nil
}

func (b *Bus) checkOpen() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	return nil
}

// inboundDedupKey identifies a platform message; "" when it has no id.
func inboundDedupKey(m bus.Inbound) string {
	if m.MessageID == "" {
		return ""
	}
	return digest(m.Channel, m.ChatID, m.MessageID)
}

func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Inbound is the agent loop's receive side: messages of the partitions this
// instance owns (see RunWorker). It is closed by Close.
func (b *Bus) Inbound() <-chan bus.Inbound { return b.in }

// Outbound is the dispatcher's receive side (see RunDispatcherFeed). It is
// closed by Close.
func (b *Bus) Outbound() <-chan bus.Outbound { return b.out }

// everyUntilClosed calls fn every d until the bus closes.
func (b *Bus) everyUntilClosed(d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-b.closing:
			return
		case <-t.C:
			fn()
		}
	}
}

// Depth returns the number of inbound and outbound messages stored and not
// yet acknowledged (for all instances: the streams are shared).
func (b *Bus) Depth() (in, out int) {
	if !b.js.Conn().IsConnected() {
		return 0, 0 // unknown while NATS is away: asking would only wait
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for i, name := range []string{b.inStream, b.outStream} {
		s, err := b.js.Stream(ctx, name)
		if err != nil {
			continue
		}
		n := int(s.CachedInfo().State.Msgs)
		if i == 0 {
			in = n
		} else {
			out = n
		}
	}
	return in, out
}

// Close stops consumption and intake: later publishers get ErrClosed and
// both receive channels are closed once the feeding goroutines ended.
// Unacknowledged messages stay in the streams for the next owner. It does
// not close the NATS connection. It may be called any number of times,
// also concurrently; every call returns once the bus is closed.
func (b *Bus) Close() {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		b.closed = true
		close(b.closing)
		b.mu.Unlock()
		b.wg.Wait()
		b.releaseAll()
		close(b.in)
		close(b.out)
	})
}

// startGoroutine registers a goroutine that must end before Close closes
// the receive channels; false after Close.
func (b *Bus) startGoroutine() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.wg.Add(1)
	return true
}

func (b *Bus) track(id string, p *pending) {
	b.mu.Lock()
	b.inflight[id] = p
	b.mu.Unlock()
}

// untrack forgets p, unless a later delivery of its message replaced it.
func (b *Bus) untrack(id string, p *pending) {
	b.mu.Lock()
	if b.inflight[id] == p {
		delete(b.inflight, id)
	}
	b.mu.Unlock()
}

// redelivered reports whether id is a message still being worked on in
// run gen (a partition's ownership, or a dispatcher feed run), delivered
// again because its consumer was recreated; it then takes the new
// delivery for the acknowledgement, and the message is not handed out
// twice.
func (b *Bus) redelivered(id string, gen uint64, msg jetstream.Msg) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.inflight[id]
	if !ok || p.settling || p.gen != gen {
		return false
	}
	p.msg = msg
	return true
}

// sanitize keeps a name usable in subjects, stream and bucket names.
func sanitize(s string) string {
	var sb strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			sb.WriteRune(r)
		default:
			sb.WriteByte('_')
		}
	}
	if sb.Len() == 0 {
		return "_"
	}
	return sb.String()
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ensureStream creates the stream, or updates it only when its settings
// differ: every instance calls this at start, and needless updates while
// other instances create consumers are wasted work for the server.
// partitionsMeta records cluster.partitions on the inbound stream, so an
// instance started with another count is told.
const partitionsMeta = "nanobot.partitions"

// checkPartitions warns when the inbound stream was last set up with
// another partition count: every instance must use the same (a message's
// partition would differ between them and its session's order break).
// Only a warning: changing the count with every worker stopped is how it
// is changed (docs/cluster.md), and the stream then takes the new count.
func (b *Bus) checkPartitions(ctx context.Context) error {
	st, err := b.js.Stream(ctx, b.inStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("natsbus: stream %s: %w", b.inStream, err)
	}
	if was := st.CachedInfo().Config.Metadata[partitionsMeta]; was != "" && was != strconv.Itoa(b.opts.Partitions) {
		b.log.Warn("cluster.partitions differs from the cluster's: every instance must use the same; if any still runs with the old count, messages go to the wrong partitions",
			"here", b.opts.Partitions, "cluster", was)
	}
	return nil
}

func ensureStream(ctx context.Context, js jetstream.JetStream, sc jetstream.StreamConfig) error {
	_, err := js.CreateStream(ctx, sc)
	if err == nil || !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return err
	}
	st, err := js.Stream(ctx, sc.Name)
	if err != nil {
		return err
	}
	cur := st.CachedInfo().Config
	if slices.Equal(cur.Subjects, sc.Subjects) && cur.Retention == sc.Retention && cur.Duplicates == sc.Duplicates && cur.Replicas == sc.Replicas &&
		cur.Metadata[partitionsMeta] == sc.Metadata[partitionsMeta] {
		return nil
	}
	_, err = js.UpdateStream(ctx, sc)
	return err
}

// EnsureKeyValue opens the bucket, creating it when it does not exist. An
// existing bucket is used as it is (its settings are not changed).
func EnsureKeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if err == nil || !errors.Is(err, jetstream.ErrBucketNotFound) {
		return kv, err
	}
	kv, err = js.CreateKeyValue(ctx, cfg)
	if errors.Is(err, jetstream.ErrBucketExists) {
		return js.KeyValue(ctx, cfg.Bucket) // another instance was faster
	}
	return kv, err
}
