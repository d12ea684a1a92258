package relay

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// SendObserver is told the outcome of every platform call the dispatcher
// makes (for metrics).
type SendObserver interface {
	Sent(channel string, kind bus.Kind, attempts int, err error)
}

// DispatcherConfig configures a Dispatcher.
type DispatcherConfig struct {
	// SendProgress delivers intermediate text (the agent's words between
	// tool calls) on channels that cannot stream it by editing.
	SendProgress bool
	// SendToolHints delivers one-line tool call notes.
	SendToolHints bool
	// PerChannel overrides SendProgress and SendToolHints for the channels
	// it names (a nil field keeps the shared value).
	PerChannel map[string]ProgressPolicy
	// MaxRetries is how often a failed send is retried (default 3).
	MaxRetries int
	// RetryBase is the first retry delay, doubled each time (default 1 s).
	RetryBase time.Duration
	// WorkerIdle is how long a chat's worker outlives its last message
	// (default DefaultWorkerIdle): a gateway that has seen many chats keeps
	// workers only for the active ones.
	WorkerIdle time.Duration
	// CrowdWorkers and CrowdIdle shorten WorkerIdle while many chats have
	// a worker: with more than CrowdWorkers (default DefaultCrowdWorkers)
	// alive, a worker that runs out of work retires after CrowdIdle
	// (default DefaultCrowdIdle). A burst of thousands of chats would
	// otherwise keep as many idle goroutines for WorkerIdle, and the Go
	// runtime keeps the descriptor of every goroutine it has made.
	CrowdWorkers int
	CrowdIdle    time.Duration
	// ChatQueue is how many messages a chat's queue holds before it drops
	// best-effort ones (default DefaultChatQueue; see Dispatcher.enqueue).
	ChatQueue int
	// StreamQuiet is how long a stream may go without a delta before the
	// dispatcher ends it itself (default DefaultStreamQuiet). The agent
	// ends every stream it opens; this is for the end that never comes
	// (a cluster worker that died mid-turn).
	StreamQuiet time.Duration
	Observer    SendObserver
	// Handled, when set, is called once the dispatcher is finished with a
	// message: sent (or merged into a stream or a queued message), given
	// up after the retries, or dropped at a full chat queue (best-effort
	// kinds only). It is called from the worker or from Run's goroutine,
	// never under the dispatcher's lock. It is not called for messages cut
	// off by ctx ending, so a durable queue acknowledges only what the
	// platform accepted or refused for good.
	Handled func(m bus.Outbound)
	// Delivery, when set, makes messages with an ID durable (see
	// DeliveryLog): retried until MaxAge instead of MaxRetries, each part
	// recorded once sent.
	Delivery DeliveryLog
	// MaxAge bounds the retries of a durable message (DefaultMaxAge).
	MaxAge time.Duration
	// RetryMax caps the wait between two tries of a durable message
	// (DefaultRetryMax); the wait doubles from RetryBase, with jitter. It
	// also caps a platform's retry-after hint, for every message.
	RetryMax time.Duration
	Log      *slog.Logger
}

// ProgressPolicy is one channel's choice of intermediate output.
type ProgressPolicy struct {
	SendProgress  *bool
	SendToolHints *bool
	// ToolHintPrefix replaces the "🔧 " before tool hints.
	ToolHintPrefix *string
}

// hintPrefix is what precedes a tool hint on channel.
func (c DispatcherConfig) hintPrefix(channel string) string {
	if p, ok := c.PerChannel[channel]; ok && p.ToolHintPrefix != nil {
		return *p.ToolHintPrefix
	}
	return "🔧 "
}

// progressFor returns whether channel gets intermediate text and tool hints.
func (c DispatcherConfig) progressFor(channel string) (progress, hints bool) {
	progress, hints = c.SendProgress, c.SendToolHints
	if p, ok := c.PerChannel[channel]; ok {
		if p.SendProgress != nil {
			progress = *p.SendProgress
		}
		if p.SendToolHints != nil {
			hints = *p.SendToolHints
		}
	}
	return progress, hints
}

// Dispatcher drains the outbound queue and delivers to channels. Each chat
// has its own worker, so a slow or failing chat never delays another, and
// messages to one chat keep their order. Stream deltas are merged into
// edits of one message no faster than the channel's edit interval; channels
// without edits get the finished text once. Long texts are split at the
// channel's limit with code blocks intact; failed sends are retried with
// backoff, honouring the platform's retry-after.
//
// Routing never waits for a chat; each chat's queue is bounded instead
// (ChatQueue, see enqueue). A chat's worker lives while the chat has
// something queued or a stream open, and WorkerIdle after that (CrowdIdle
// while more than CrowdWorkers chats have one); a stream
// whose end never comes is ended after StreamQuiet, so no chat keeps a
// worker for good.
type Dispatcher struct {
	cfg      DispatcherConfig
	log      *slog.Logger
	channels map[string]channels.Channel

	mu      sync.Mutex
	workers map[string]*chatWorker
	wg      sync.WaitGroup

	streams atomic.Int64 // streams open in all workers
	dropped atomic.Int64 // best-effort messages dropped at a full chat queue
}

// DispatcherStats is a snapshot of what a Dispatcher holds.
type DispatcherStats struct {
	// Chats is the number of chat workers alive.
	Chats int
	// Queued is the number of messages routed to a chat's queue that its
	// worker has not taken yet.
	Queued int
	// Streams is the number of streams open: a delta was seen, the end
	// not yet.
	Streams int
	// Dropped counts the best-effort messages (typing, tool hints,
	// progress, stream text) dropped at a full chat queue since the
	// dispatcher started.
	Dropped int64
}

// Stats reports what the dispatcher holds now (for metrics and tests).
func (d *Dispatcher) Stats() DispatcherStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := DispatcherStats{Chats: len(d.workers), Streams: int(d.streams.Load()), Dropped: d.dropped.Load()}
	for _, w := range d.workers {
		st.Queued += len(w.queue)
	}
	return st
}

// NewDispatcher returns a dispatcher for the given channels.
func NewDispatcher(cfg DispatcherConfig, chans []channels.Channel) *Dispatcher {
	if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = time.Second
	}
	if cfg.WorkerIdle <= 0 {
		cfg.WorkerIdle = DefaultWorkerIdle
	}
	if cfg.CrowdWorkers <= 0 {
		cfg.CrowdWorkers = DefaultCrowdWorkers
	}
	if cfg.CrowdIdle <= 0 {
		cfg.CrowdIdle = DefaultCrowdIdle
	}
	if cfg.ChatQueue <= 0 {
		cfg.ChatQueue = DefaultChatQueue
	}
	if cfg.StreamQuiet <= 0 {
		cfg.StreamQuiet = DefaultStreamQuiet
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = DefaultRetryMax
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Dispatcher{cfg: cfg, log: log.With("component", "dispatcher"), channels: map[string]channels.Channel{}, workers: map[string]*chatWorker{}}
	for _, c := range chans {
		d.channels[c.Name()] = c
	}
	return d
}

// AddChannel registers a channel after construction (the web chat).
func (d *Dispatcher) AddChannel(c channels.Channel) {
	d.mu.Lock()
	d.channels[c.Name()] = c
	d.mu.Unlock()
}

// Run delivers messages from out until it is closed or ctx ends, then waits
// for the chat workers to flush what they hold (on close) or stop (on ctx).
func (d *Dispatcher) Run(ctx context.Context, out <-chan bus.Outbound) error {
	defer func() {
		d.mu.Lock()
		for _, w := range d.workers {
			w.closed = true
			w.signal()
		}
		d.workers = map[string]*chatWorker{}
		d.mu.Unlock()
		d.wg.Wait()
	}()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m, ok := <-out:
			if !ok {
				return nil
			}
			d.route(ctx, m)
		}
	}
}

func (d *Dispatcher) route(ctx context.Context, m bus.Outbound) {
	d.mu.Lock()
	ch, ok := d.channels[m.Channel]
	if !ok {
		d.mu.Unlock()
		d.log.Warn("outbound for unknown channel dropped", "channel", m.Channel, "kind", m.Kind.String())
		if d.cfg.Handled != nil {
			d.cfg.Handled(m)
		}
		return
	}
	key := m.Channel + "\x00" + m.ChatID
	w, ok := d.workers[key]
	if !ok {
		w = &chatWorker{d: d, key: key, ch: ch, wake: make(chan struct{}, 1), streams: map[string]*stream{}}
		d.workers[key] = w
		d.wg.Go(func() { w.run(ctx) })
	}
	queued := d.enqueue(w, m)
	d.mu.Unlock()
	if !queued {
		if d.cfg.Handled != nil {
			d.cfg.Handled(m) // merged into a queued message, or dropped
		}
		return
	}
	w.signal()
}

// DefaultChatQueue is how many messages a chat's queue holds before it
// drops best-effort ones (DispatcherConfig.ChatQueue).
const DefaultChatQueue = 256

// enqueue puts m in w's queue and reports whether it did. Routing never
// waits for a chat (one slow chat must not hold up the others), so the
// queue is kept bounded instead: a delta joins the queued delta of its
// stream, a typing request is dropped while one is queued since the last
// reply, and once ChatQueue messages wait, typing, tool hints, progress
// and the deltas of a new stream are dropped (the stream's end carries
// its whole text). Replies (messages, stream ends) are always queued:
// they are what the user waits for, and a durable one is on disk anyway;
// they are bounded by the turns that produce them and, while the platform
// is down, by MaxAge. d.mu is held.
func (d *Dispatcher) enqueue(w *chatWorker, m bus.Outbound) bool {
	switch m.Kind {
	case bus.KindDelta:
		for i := len(w.queue) - 1; i >= 0; i-- {
			if q := &w.queue[i]; q.Kind == bus.KindDelta && q.StreamID == m.StreamID {
				q.Content += m.Content
				return false
			}
		}
	case bus.KindTyping:
	scan:
		for i := len(w.queue) - 1; i >= 0; i-- {
			switch w.queue[i].Kind {
			case bus.KindTyping:
				return false
			case bus.KindMessage, bus.KindStreamEnd:
				break scan // typing after a reply is news
			}
		}
	}
	if len(w.queue) >= d.cfg.ChatQueue && m.Kind != bus.KindMessage && m.Kind != bus.KindStreamEnd {
		d.dropped.Add(1)
		if !w.full {
			w.full = true
			d.log.Warn("chat's delivery queue is full; dropping typing, tool hints and progress until it drains (replies still wait)",
				"channel", m.Channel, "chat_id", m.ChatID, "queued", len(w.queue))
		}
		return false
	}
	w.queue = append(w.queue, m)
	return true
}

// DefaultWorkerIdle is how long a chat's worker outlives its last message
// (DispatcherConfig.WorkerIdle).
const DefaultWorkerIdle = 20 * time.Second

// DispatcherConfig.CrowdWorkers and CrowdIdle defaults: more chats than
// one person's bot has at once, and long enough for a turn's next reply.
const (
	DefaultCrowdWorkers = 256
	DefaultCrowdIdle    = 2 * time.Second
)

// idleFor is how long a worker that ran out of work waits for more before
// it retires: WorkerIdle, or CrowdIdle while many chats have a worker.
func (d *Dispatcher) idleFor() time.Duration {
	d.mu.Lock()
	crowded := len(d.workers) > d.cfg.CrowdWorkers
	d.mu.Unlock()
	if crowded && d.cfg.CrowdIdle < d.cfg.WorkerIdle {
		return d.cfg.CrowdIdle
	}
	return d.cfg.WorkerIdle
}

// DefaultStreamQuiet is how long a stream may go without a delta before
// the dispatcher ends it (DispatcherConfig.StreamQuiet): far beyond the
// providers' stream idle timeout (90 s), so a stream still running is
// never cut.
const DefaultStreamQuiet = 10 * time.Minute

// retire removes w if nothing is queued for it or on its way to it.
func (d *Dispatcher) retire(w *chatWorker) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(w.queue) > 0 || w.closed || d.workers[w.key] != w {
		return false
	}
	delete(d.workers, w.key)
	return true
}

// chatWorker delivers one chat's messages in order.
type chatWorker struct {
	d   *Dispatcher
	key string
	ch  channels.Channel
	// queue, closed and full are guarded by d.mu; wake holds one pending
	// signal. full is set from the first message dropped at a full queue
	// until the queue is empty again.
	queue   []bus.Outbound
	closed  bool
	full    bool
	wake    chan struct{}
	streams map[string]*stream
	timer   *time.Timer
	timerAt time.Time // when timer fires
}

func (w *chatWorker) run(ctx context.Context) {
	idle := time.NewTimer(w.d.idleFor())
	defer idle.Stop()
	defer func() {
		for id := range w.streams { // cut off by ctx: nobody finishes them now
			w.forgetStream(id)
		}
	}()
	for {
		var tick <-chan time.Time
		if w.timer != nil {
			tick = w.timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
			for {
				m, ok, closed := w.next()
				if closed {
					w.flushAll(ctx)
					return
				}
				if !ok {
					break
				}
				err := w.handle(ctx, m)
				if ctx.Err() == nil {
					w.finished(m, err)
					if h := w.d.cfg.Handled; h != nil {
						h(m)
					}
				}
			}
			// A chat that stays busy may never be idle long enough for
			// the check below: its quiet streams end here.
			w.expireQuiet(ctx)
			idle.Reset(w.d.idleFor())
		case <-tick:
			w.timer = nil
			w.flushDue(ctx)
			idle.Reset(w.d.idleFor())
		case <-idle.C:
			w.expireQuiet(ctx)
			if len(w.streams) == 0 && w.timer == nil && w.d.retire(w) {
				return
			}
			idle.Reset(w.d.idleFor())
		}
	}
}

// signal wakes the worker (never blocks).
func (w *chatWorker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// next takes the oldest queued message; closed is set once the queue is
// empty and the dispatcher is shutting down.
func (w *chatWorker) next() (m bus.Outbound, ok, closed bool) {
	w.d.mu.Lock()
	defer w.d.mu.Unlock()
	if len(w.queue) == 0 {
		w.queue = nil // release the backing array
		w.full = false
		return m, false, w.closed
	}
	m = w.queue[0]
	w.queue[0] = bus.Outbound{}
	w.queue = w.queue[1:]
	return m, true, false
}

func (w *chatWorker) editor() (channels.Editor, bool) { return channels.EditorOf(w.ch) }

func (w *chatWorker) limit() int {
	if l, ok := w.ch.(channels.Limiter); ok && l.MessageLimit() > 0 {
		return l.MessageLimit()
	}
	return DefaultMessageLimit
}

// durable reports whether m is delivered through the DeliveryLog.
func (w *chatWorker) durable(m bus.Outbound) bool {
	return w.d.cfg.Delivery != nil && m.ID != ""
}

// held reports whether a durable queue holds m until the dispatcher is
// done with it: the outbox (durable), or in a cluster the JetStream stream,
// which acknowledges a reply only through Handled. A held reply is retried
// until MaxAge like a durable one: given up after MaxRetries, Handled
// would acknowledge a reply the platform never took.
func (w *chatWorker) held(m bus.Outbound) bool {
	if w.durable(m) {
		return true
	}
	return w.d.cfg.Handled != nil && m.ID != "" && (m.Kind == bus.KindMessage || m.Kind == bus.KindStreamEnd)
}

// finished tells the DeliveryLog how a durable message's delivery ended.
func (w *chatWorker) finished(m bus.Outbound, err error) {
	if !w.durable(m) {
		return
	}
	var perm *channels.PermanentError
	outcome := OutcomeSent
	switch {
	case errors.Is(err, errSkipped):
		outcome = OutcomeSkipped
	case errors.As(err, &perm):
		outcome = OutcomeRefused
	case err != nil:
		outcome = OutcomeExpired
		w.d.log.Error("reply expired undelivered", "channel", w.ch.Name(), "chat_id", m.ChatID, "max_age", w.d.cfg.MaxAge, "err", err)
	}
	w.d.cfg.Delivery.Finished(m.ID, outcome)
}

// errSkipped is handle's answer for a message it chose not to send.
var errSkipped = errors.New("not sent")

// handle delivers m. Its error matters for durable messages: nil once
// sent, errSkipped when there was nothing to send, else why it failed.
func (w *chatWorker) handle(ctx context.Context, m bus.Outbound) error {
	cfg := w.d.cfg
	sendProgress, sendHints := cfg.progressFor(w.ch.Name())
	switch m.Kind {
	case bus.KindTyping:
		if t, ok := w.ch.(channels.Typer); ok {
			if err := t.Typing(ctx, m.ChatID, m.Metadata); err != nil {
				w.d.log.Debug("typing failed", "channel", w.ch.Name(), "err", err)
			}
		}
	case bus.KindToolHint:
		if sendHints {
			return w.sendText(ctx, m, cfg.hintPrefix(w.ch.Name())+m.Content)
		}
	case bus.KindProgress:
		if sendProgress {
			return w.sendText(ctx, m, m.Content)
		}
	case bus.KindMessage:
		return w.sendText(ctx, m, m.Content)
	case bus.KindDelta:
		if _, ok := w.editor(); !ok {
			return nil // delivered whole at the stream's end
		}
		st := w.streams[m.StreamID]
		if st == nil {
			st = &stream{base: m, started: time.Now()}
			st.ref = w.unfinishedStream(m.Turn)
			if dr, ok := w.drafter(); ok && st.ref.MessageID == "" {
				st.draft = dr.DraftsTo(m)
			}
			w.openStream(m.StreamID, st)
		}
		st.total += m.Content
		st.lastDelta = time.Now()
		if !st.failed {
			w.push(ctx, st, false)
		}
	case bus.KindStreamEnd:
		st := w.streams[m.StreamID]
		w.forgetStream(m.StreamID)
		if st == nil && w.durable(m) {
			// A message an earlier attempt of this turn streamed (before a
			// restart): finish it instead of sending another.
			if ref := w.unfinishedStream(m.Turn); ref.MessageID != "" {
				st = &stream{base: m, started: time.Now(), ref: ref}
			}
		}
		if st != nil && st.draft {
			if strings.HasPrefix(m.Content, st.total[:st.done]) {
				st.total = m.Content
			}
			st.base = m
			return w.endDraft(ctx, st, m)
		}
		if _, assembles := w.ch.(channels.Assembler); assembles && (st == nil || !st.visible()) && !m.Interrupted {
			// The API's answer is made of the stream ends: this one goes
			// whole, with its StreamID (channels.Assembler).
			if strings.TrimSpace(m.Content) == "" && !m.Final {
				return errSkipped
			}
			_, err := w.send(ctx, m)
			return err
		}
		if st == nil || !st.visible() {
			// Nothing was shown yet: send the text like a message, unless it
			// is intermediate text the user did not ask for, or the start
			// of an answer that was cut off (the user stopped it, or an
			// error reply follows).
			if !m.Interrupted && (m.Final || sendProgress) {
				return w.sendText(ctx, m, m.Content)
			}
			return errSkipped
		}
		// The full text is authoritative (deltas may have been merged).
		if strings.HasPrefix(m.Content, st.total[:st.done]) {
			st.total = m.Content
		}
		st.base = m
		return w.endStream(ctx, st, m)
	}
	return errSkipped
}

// endStream shows a stream's last text and finishes its message: m is its
// end (or, for a stream that went quiet, its last delta, marked
// Interrupted). The text of an interrupted stream that could not be shown
// is not sent again: it was cut off anyway.
func (w *chatWorker) endStream(ctx context.Context, st *stream, m bus.Outbound) error {
	if st.failed {
		if m.Interrupted {
			return errSkipped
		}
		return w.sendText(ctx, m, st.current())
	}
	w.pushStream(ctx, st, true)
	if st.failed {
		// The last edit or send failed: what the platform does not
		// show yet goes out as plain messages.
		if m.Interrupted {
			return errSkipped
		}
		return w.sendText(ctx, m, st.current())
	}
	w.finish(ctx, st)
	if se, ok := w.ch.(channels.StreamEnder); ok {
		se.StreamEnded(ctx, st.ref, m)
	}
	return nil
}

// expireQuiet ends the streams that saw no delta for StreamQuiet: their
// turn will not end them (a cluster worker that died mid-turn, an agent
// older than the end-on-every-exit rule). The text so far is shown and
// its message finished, and the stream is forgotten, so the worker can
// retire. An end that arrives after all is delivered as a stream that was
// never seen.
func (w *chatWorker) expireQuiet(ctx context.Context) {
	for id, st := range w.streams {
		quiet := time.Since(st.lastDelta)
		if quiet < w.d.cfg.StreamQuiet {
			continue
		}
		w.d.log.Warn("stream went quiet without an end; finishing it", "channel", w.ch.Name(), "chat_id", st.base.ChatID, "quiet", quiet.Round(time.Second))
		w.forgetStream(id)
		end := st.cutOff()
		switch {
		case st.draft:
			_ = w.endDraft(ctx, st, end)
		case st.visible():
			_ = w.endStream(ctx, st, end)
		}
	}
}

// sendText sends a whole text, split to the channel's limit. For a durable
// message each part the platform accepted is recorded, parts recorded
// before (an earlier run) are skipped, and each part carries a stable
// idempotency key.
func (w *chatWorker) sendText(ctx context.Context, m bus.Outbound, text string) error {
	if strings.TrimSpace(text) == "" && len(m.Media) == 0 {
		return errSkipped
	}
	chunks := Split(text, w.limit())
	var sent map[int]channels.MessageRef
	durable := w.durable(m)
	if durable {
		sent = w.d.cfg.Delivery.SentParts(m.ID)
	}
	for i, c := range chunks {
		if _, ok := sent[i]; ok {
			continue
		}
		part := m
		// A whole message, never edited: without its stream's id, so no
		// adapter takes it for the start of a stream (a Feishu card, a
		// WeCom stream) that nothing would finish.
		part.Kind, part.Content, part.StreamID = bus.KindMessage, c, ""
		if i > 0 {
			part.Media = nil
		}
		if i < len(chunks)-1 {
			part.Actions = nil // the buttons go under the last part
		}
		if durable {
			part.IdempotencyKey = m.ID + "." + strconv.Itoa(i)
		}
		ref, err := w.send(ctx, part)
		if err != nil {
			return err
		}
		if durable {
			if err := w.d.cfg.Delivery.PartSent(m.ID, i, ref); err != nil {
				w.d.log.Warn("recording a sent part failed; a restart may send it again", "channel", w.ch.Name(), "err", err)
			}
		}
	}
	return nil
}

// send delivers one message, with media through MediaSender when present.
func (w *chatWorker) send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	return w.retry(ctx, m, func() (channels.MessageRef, error) {
		if vs, ok := w.ch.(channels.VoiceSender); ok && m.Voice && len(m.Media) > 0 {
			return vs.SendVoice(ctx, m)
		}
		if ms, ok := w.ch.(channels.MediaSender); ok && len(m.Media) > 0 {
			return ms.SendMedia(ctx, m)
		}
		return w.ch.Send(ctx, m)
	})
}

// retry calls f until it succeeds, fails permanently, or MaxRetries retries
// (1 s, 2 s, 4 s ... with jitter, or the platform's retry-after up to
// RetryMax) are spent.
// A durable or held message m is retried instead until it is older than MaxAge,
// the waits growing to RetryMax: a channel that is down or reconnecting
// holds its chat's messages back, in order, and delivers them once it is
// back.
func (w *chatWorker) retry(ctx context.Context, m bus.Outbound, f func() (channels.MessageRef, error)) (channels.MessageRef, error) {
	cfg := w.d.cfg
	kind := m.Kind
	delay := cfg.RetryBase
	durable := w.held(m)
	var queued time.Time
	if durable {
		if cfg.Delivery != nil {
			queued = cfg.Delivery.Queued(m.ID)
		}
		if queued.IsZero() {
			queued = time.Now()
		}
	}
	for attempt := 1; ; attempt++ {
		ref, err := f()
		if err == nil {
			w.observe(kind, attempt, nil)
			return ref, nil
		}
		var perm *channels.PermanentError
		givenUp := attempt > cfg.MaxRetries
		if durable {
			givenUp = time.Since(queued) > cfg.MaxAge
		}
		if ctx.Err() != nil && !errors.As(err, &perm) {
			// Stopping: a kept reply is sent again at the next start (or
			// by the next channels node), so this is no failure to report.
			w.observe(kind, attempt, err)
			if durable {
				w.d.log.Info("send interrupted by the shutdown; the reply is kept and sent again", "channel", w.ch.Name(), "attempts", attempt)
			}
			return channels.MessageRef{}, err
		}
		if errors.As(err, &perm) || givenUp {
			w.observe(kind, attempt, err)
			w.d.log.Error("send failed, giving up", "channel", w.ch.Name(), "attempts", attempt, "err", err)
			return channels.MessageRef{}, err
		}
		wait := delay + time.Duration(rand.Int64N(int64(delay)/4+1))
		var ra *channels.RetryAfterError
		if errors.As(err, &ra) && ra.After > 0 {
			// The platform's hint, but never longer than RetryMax: a
			// Retry-After of hours would hold the chat (its typing, its
			// stream edits, the messages after) for that long.
			wait = min(ra.After, cfg.RetryMax)
		}
		w.d.log.Warn("send failed, retrying", "channel", w.ch.Name(), "attempt", attempt, "wait", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			w.observe(kind, attempt, ctx.Err())
			return channels.MessageRef{}, ctx.Err()
		}
		delay *= 2
		if durable {
			delay = min(delay, cfg.RetryMax)
		}
	}
}

func (w *chatWorker) observe(kind bus.Kind, attempts int, err error) {
	if o := w.d.cfg.Observer; o != nil {
		o.Sent(w.ch.Name(), kind, attempts, err)
	}
}
