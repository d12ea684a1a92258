// The Loop's lifecycle and its per-session workers: admission, queue
// modes, batching, retiring idle workers. What one turn does is in turn.go.

package agent

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/agent/skills"
	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools/approval"
	"github.com/nanobot-go/nanobot/tools/goals"
)

// SessionStore is what the loop needs of session storage.
type SessionStore interface {
	Load(ctx context.Context, key string) (*session.Session, error)
	Append(ctx context.Context, s *session.Session, msgs ...providers.Message) error
	Archive(ctx context.Context, s *session.Session) error
	SetMetadata(ctx context.Context, s *session.Session, key string, value any) error
}

// Outbox receives everything the agent says.
type Outbox interface {
	PublishOutbound(ctx context.Context, m bus.Outbound) error
}

// Consolidator compresses old history into memory (the memory package).
type Consolidator interface {
	// MaybeConsolidate consolidates s if the next prompt would exceed the
	// budget. It must not fail the turn for long.
	MaybeConsolidate(ctx context.Context, s *session.Session) error
	// ArchiveAll consolidates everything not yet consolidated (before /new).
	ArchiveAll(ctx context.Context, s *session.Session) error
	// Compact folds all but the last keep messages into memory now
	// (/compact) and returns how many it folded.
	Compact(ctx context.Context, s *session.Session, keep int) (folded int, err error)
}

// SubagentCanceller cancels a session's background sub-agents.
type SubagentCanceller interface {
	CancelSession(key string) int
}

// LoopConfig wires a Loop.
type LoopConfig struct {
	Store   SessionStore
	Builder *ContextBuilder
	Runner  *Runner
	Out     Outbox
	// MaxConcurrentTurns caps LLM turns running at once (default 8).
	MaxConcurrentTurns int
	// MaxToolResultChars truncates stored tool results (default 16000).
	MaxToolResultChars int
	// ContextWindowTokens is shown by /status.
	ContextWindowTokens int
	// IdleCompact is how long a conversation rests before CompactWhenIdle
	// folds it into memory (0: never).
	IdleCompact time.Duration
	// SessionTTL is how long a conversation may rest before the next
	// message starts a new one, the old one archived as with /new (0:
	// never).
	SessionTTL   time.Duration
	Consolidator Consolidator // optional
	// Presets let chats switch models (/model) and bindings pick one;
	// optional.
	Presets   Presets
	Subagents SubagentCanceller // optional
	// Usage answers /usage (optional: without it /usage says so).
	Usage *usage.Ledger
	// Queue is what happens to a person's message that arrives while its
	// chat's turn is running (the zero value: each waits its turn). A
	// binding's mode (bus.Inbound.QueueMode) and a chat's /queue choice
	// win over it.
	Queue configs.QueueConfig
	// OnTurnDone is called after a message was fully handled (turn saved,
	// replies published) or given up; the durable inbox marks it done.
	OnTurnDone func(m bus.Inbound, err error)
	// Admit, when set, is asked before each message's turn starts; a
	// message it refuses is not run but given back to the inbox
	// (OnTurnDone with ErrHandedBack) to come again later. The cluster
	// inbox refuses a message while an earlier one of its session is being
	// redelivered, so a session's messages are answered in order.
	Admit func(m bus.Inbound) bool
	// Voice speaks final answers to voice notes and in chats with
	// "/voice on" (optional).
	Voice VoiceConfig
	// Transcription turns voice notes and audio files into text before
	// their turn (optional).
	Transcription TranscriptionConfig
	// MaxSessionQueue bounds the messages waiting in one session behind
	// its running turn (default DefaultMaxSessionQueue); MaxQueue bounds
	// them over all sessions (default DefaultMaxQueue). A message beyond
	// either is refused: the sender is told so, and OnTurnDone gets
	// ErrQueueFull. A /stop is never refused.
	MaxSessionQueue int
	MaxQueue        int
	// SaveRetry is how long a turn's failed save (a full disk) is tried
	// again, with backoff, before the turn gives up with ErrNotSaved
	// (default DefaultSaveRetry). The session's worker waits meanwhile.
	SaveRetry time.Duration
	// Approvals takes admins' answers to approval requests ("/approve ID",
	// "/deny ID") at once, beside the running turns (one of them waits
	// for the answer); nil: those words go to the model like any text.
	Approvals *approval.Broker
	// Goals answers /goal and lets admins set one (nil: /goal goes to the
	// model as text).
	Goals *goals.Store
	// Restart stops the gateway and starts it again (/restart, admins);
	// nil: /restart says it is not available.
	Restart func(channel, chatID, sessionKey string)
	// Hooks are asked when a message is accepted, before a reply is sent,
	// when a turn is over and when a session is reset (optional; the
	// runner asks its own, Runner.Hooks, around model and tool calls).
	Hooks Hooks
	// Skills answers /skill (nil: /skill goes to the model as text).
	Skills *skills.Loader
	// SwitchSkill saves /skill enable|disable (see Deps.SwitchSkill).
	SwitchSkill func(name string, disabled bool) ([]string, error)
	// Recall is memory_search's index (optional): told of every turn
	// handled, so it reads it in the background, and closed when Run
	// returns.
	Recall interface {
		Notify()
		Close() error
	}
	Log *slog.Logger
}

// DefaultSaveRetry is LoopConfig.SaveRetry's default.
const DefaultSaveRetry = 30 * time.Second

// ErrNotSaved is OnTurnDone's error for a turn that ran (its reply may
// have been sent) but could not be saved to its session within
// SaveRetry. The message must not be marked done: replayed at the next
// start, the turn runs again, its reply is not sent a second time (the
// outbox holds it) and the session gets the turn.
var ErrNotSaved = errors.New("agent: the turn could not be saved")

// Default queue bounds (LoopConfig.MaxSessionQueue, MaxQueue): far more
// than a person writes while one answer runs, and enough to absorb every
// channel's burst while the turns are at their cap; beyond them waiting
// means hours, and the sender is better told at once.
const (
	DefaultMaxSessionQueue = 100
	DefaultMaxQueue        = 10000
)

// ErrQueueFull is OnTurnDone's error for a message refused because its
// session, or the loop, had as many messages waiting as it may hold. The
// sender was told; the message is not run.
var ErrQueueFull = errors.New("agent: too many messages waiting")

// ErrHandedBack is OnTurnDone's error for a message Admit refused: it was
// not run and must be delivered again.
var ErrHandedBack = errors.New("agent: message handed back to the inbox")

// Loop drains inbound messages: one worker per active session (FIFO within
// a session), sessions in parallel, at most MaxConcurrentTurns LLM turns at
// once. A worker exists only while its session has queued work, so idle
// sessions cost nothing. The chat's queue mode decides what a person's
// message does while a turn runs (queue.go): wait, join the turn (steer),
// join the next turn after a pause (collect), or cancel the turn and start
// one that answers everything (interrupt). Every message is reported to
// OnTurnDone exactly once, when the turn that answers it is over.
type Loop struct {
	cfg LoopConfig
	log *slog.Logger
	sem chan struct{}

	mu         sync.Mutex
	workers    map[string]*worker
	waiting    int           // messages in the workers' queues and steered lists
	busy       chan struct{} // closed when the last worker exits; nil while idle
	lastActive [2]string     // channel, chat id of the latest message from a person
	idle       idleSessions  // when each session's worker retired (idle compaction)
	wg         sync.WaitGroup

	presets presetRunners
	// queueChoices remembers each chat's /queue choice ("" none) by
	// session key while it has a worker, read once from the session and
	// refreshed by every turn.
	queueChoices map[string]string
}

// worker is a session's state; every field is guarded by Loop.mu.
type worker struct {
	// running is set once a goroutine works the queue (l.work); hold,
	// while not nil, keeps it from starting a turn: Reset is setting the
	// session aside and closes it when done.
	running bool
	hold    chan struct{}
	queue   []bus.Inbound
	cancel  context.CancelFunc // of the running turn, nil between turns
	// mode is the session's queue mode ("" until the worker read it).
	mode string
	// lastArrival is when the latest message came (collect's debounce);
	// wake tells a debouncing worker about it; collected is set once the
	// burst at the head of the queue is over.
	lastArrival time.Time
	wake        chan struct{}
	collected   bool
	// steering is set while the running turn takes steered messages;
	// steered are those it has not picked up yet.
	steering bool
	steered  []bus.Inbound
	// interruptible is set while the running turn answers a person (not a
	// command or a scheduled job); interrupted once a newer message
	// cancelled it.
	interruptible bool
	interrupted   bool
	// carried are messages of interrupted turns, answered by the next.
	carried []bus.Inbound
	// foldOnly marks a worker started by idle compaction that has been
	// given no message: its retiring is not a new idle spell.
	foldOnly bool
	// finished are messages over without a turn of their own (a /stop
	// and what it cancelled): the worker reports them to OnTurnDone
	// before it goes on.
	finished []finished
}

// finished is a message for OnTurnDone and its outcome.
type finished struct {
	m   bus.Inbound
	err error
}

// NewLoop returns a loop; Run starts it.
func NewLoop(cfg LoopConfig) *Loop {
	if cfg.MaxConcurrentTurns <= 0 {
		cfg.MaxConcurrentTurns = 8
	}
	if cfg.MaxToolResultChars <= 0 {
		cfg.MaxToolResultChars = 16000
	}
	if cfg.MaxSessionQueue <= 0 {
		cfg.MaxSessionQueue = DefaultMaxSessionQueue
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = DefaultMaxQueue
	}
	if cfg.SaveRetry <= 0 {
		cfg.SaveRetry = DefaultSaveRetry
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Loop{
		cfg:     cfg,
		log:     log.With("component", "agent"),
		sem:     make(chan struct{}, cfg.MaxConcurrentTurns),
		workers: map[string]*worker{},
	}
}

// Run consumes in until it is closed or ctx ends, then waits for running
// turns (which see ctx's cancellation) to finish.
func (l *Loop) Run(ctx context.Context, in <-chan bus.Inbound) error {
	if l.cfg.Recall != nil {
		defer l.cfg.Recall.Close() // after the workers: deferred first, runs last
	}
	defer l.wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m, ok := <-in:
			if !ok {
				return nil
			}
			l.Submit(ctx, m)
		}
	}
}

// Submit hands one message to its session's worker. /stop is handled at
// once, ahead of the queue.
func (l *Loop) Submit(ctx context.Context, m bus.Inbound) {
	switch name, _ := parseCommand(m.Content); {
	case m.Stop || name == "stop":
		n := l.StopSession(m.Key())
		l.notice(ctx, m, stopReply(n))
		l.finishLater(ctx, m, nil)
		return
	case (name == "approve" || name == "deny") && l.cfg.Approvals != nil:
		l.notice(ctx, m, l.answerApproval(m))
		l.finishLater(ctx, m, nil)
		return
	}
	key := m.Key()
	l.mu.Lock()
	if m.FromPerson() {
		l.lastActive = [2]string{m.Channel, m.ChatID}
	}
	if full := l.full(key); full != "" {
		l.mu.Unlock()
		l.refuse(ctx, m, full)
		return
	}
	w, start := l.workerFor(key)
	if mergeable(m) {
		w.lastArrival = time.Now()
		// A worker that has not read its mode yet ("") has no turn to
		// steer, interrupt or collect into.
		switch w.mode {
		case configs.QueueSteer:
			if w.steering && len(w.queue) == 0 {
				// The running turn picks it up at its next model call;
				// if there is none, the worker queues it after the turn.
				// Behind older queued messages it waits its turn, so
				// the chat's messages are answered in order.
				w.steered = append(w.steered, m)
				l.waiting++
				l.mu.Unlock()
				return
			}
		case configs.QueueInterrupt:
			if w.interruptible && !w.interrupted {
				w.interrupted = true
				w.cancel()
			}
		case configs.QueueCollect:
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
	w.queue = append(w.queue, m)
	w.foldOnly = false
	l.waiting++
	l.mu.Unlock()
	if start {
		l.wg.Go(func() { l.work(ctx, key, w) })
	}
}

// full says which bound a new message of session key would exceed
// ("session", "loop"), or "". l.mu is held.
func (l *Loop) full(key string) string {
	if l.waiting >= l.cfg.MaxQueue {
		return "loop"
	}
	if w := l.workers[key]; w != nil && len(w.queue)+len(w.steered) >= l.cfg.MaxSessionQueue {
		return "session"
	}
	return ""
}

// refuse turns m away because too many messages wait (bound names the
// bound): the sender is told, and OnTurnDone gets ErrQueueFull. It runs
// on Submit's goroutine, outside the lock: a slow OnTurnDone slows the
// intake, which is the bus's back-pressure, while a worker's list of
// messages to report would grow with the flood it is meant to bound.
func (l *Loop) refuse(ctx context.Context, m bus.Inbound, bound string) {
	l.log.Warn("message refused: too many messages waiting", "session", m.Key(), "bound", bound)
	if !m.Background && m.FromPerson() {
		text := "I have too many messages from this chat waiting already, so I did not take this one. Please send it again once I have caught up."
		if bound == "loop" {
			text = "I have too many messages waiting right now, so I did not take this one. Please send it again in a few minutes."
		}
		l.publishWith(ctx, m, bus.Outbound{Kind: bus.KindMessage, Content: text, Final: true, IsError: true}, false) // in Submit: see notice
	}
	l.done(m, ErrQueueFull)
}

// Queued returns how many messages wait in the sessions' queues (not
// counting the turns running).
func (l *Loop) Queued() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiting
}

// workerFor returns the worker of session key, creating it if there is
// none. start is true when no goroutine works it yet: the caller starts
// one (l.work). l.mu is held.
func (l *Loop) workerFor(key string) (w *worker, start bool) {
	w = l.workers[key]
	if w == nil {
		w = l.newWorker(key)
	}
	start = !w.running
	w.running = true
	return w, start
}

// newWorker registers an empty worker for session key, with no goroutine
// working it yet. l.mu is held.
func (l *Loop) newWorker(key string) *worker {
	w := &worker{wake: make(chan struct{}, 1)}
	if len(l.workers) == 0 {
		l.busy = make(chan struct{})
	}
	l.workers[key] = w
	return w
}

// finishLater has m reported to OnTurnDone with err by its session's
// worker (started if the session has none), after what that worker is
// doing now. OnTurnDone may block (journal compaction; in a cluster an
// acknowledgement retried for seconds): on the caller's goroutine it
// would hold up every message behind it.
func (l *Loop) finishLater(ctx context.Context, m bus.Inbound, err error) {
	key := m.Key()
	l.mu.Lock()
	w, start := l.workerFor(key)
	w.finished = append(w.finished, finished{m, err})
	l.mu.Unlock()
	if start {
		l.wg.Go(func() { l.work(ctx, key, w) })
	}
}

// StopSession cancels the running turn and the queued messages of a
// session, and its sub-agents. It returns how many things it stopped.
// The session's worker reports the cancelled messages to OnTurnDone;
// StopSession itself runs no callback.
func (l *Loop) StopSession(key string) int {
	n := 0
	l.mu.Lock()
	if w, ok := l.workers[key]; ok {
		for _, q := range w.queue {
			w.finished = append(w.finished, finished{q, context.Canceled})
		}
		for _, q := range w.steered {
			w.finished = append(w.finished, finished{q, context.Canceled})
		}
		n += len(w.queue) + len(w.steered)
		l.waiting -= len(w.queue) + len(w.steered)
		w.queue, w.steered = nil, nil
		w.interrupted = false // a stop is not an interruption: nothing is carried
		select {
		case w.wake <- struct{}{}: // a debouncing worker has nothing to wait for
		default:
		}
		if w.cancel != nil {
			w.cancel()
			n++
		}
	}
	l.mu.Unlock()
	if l.cfg.Subagents != nil {
		n += l.cfg.Subagents.CancelSession(key)
	}
	return n
}

// Idle reports whether no session has running or queued work.
func (l *Loop) Idle() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.workers) == 0
}

// WaitIdle blocks until no session has running or queued work, or ctx
// ends (then it returns ctx's error). Work submitted meanwhile extends the
// wait.
func (l *Loop) WaitIdle(ctx context.Context) error {
	for {
		l.mu.Lock()
		busy := l.busy
		l.mu.Unlock()
		if busy == nil {
			return nil
		}
		select {
		case <-busy:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// LastActive returns the chat of the most recent message from a person.
func (l *Loop) LastActive() (channel, chatID string, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastActive[0], l.lastActive[1], l.lastActive[0] != ""
}

func stopReply(n int) string {
	if n == 0 {
		return "Nothing to stop."
	}
	return "Stopped."
}

// work runs a session's queue in order and exits when it is empty.
func (l *Loop) work(ctx context.Context, key string, w *worker) {
	l.mu.Lock()
	hold := w.hold
	l.mu.Unlock()
	if hold != nil {
		// Not on ctx: the session is being archived, and no turn may read
		// or write it before that is over (Reset is bounded by its own
		// context and always closes hold).
		<-hold
	}
	mode := "" // read from the session with the first message to answer
	for {
		l.mu.Lock()
		if over := w.finished; len(over) > 0 {
			w.finished = nil
			l.mu.Unlock()
			for _, f := range over {
				l.done(f.m, f.err)
			}
			continue
		}
		if len(w.queue) == 0 || ctx.Err() != nil {
			l.retire(ctx, key, w)
			return
		}
		if mode == "" {
			first := w.queue[0]
			l.mu.Unlock()
			mode = l.resolveMode(ctx, first)
			l.mu.Lock()
			w.mode = mode
			l.mu.Unlock()
			continue
		}
		head := w.queue[0]
		merge := mergeable(head) && (mode == configs.QueueCollect || mode == configs.QueueInterrupt)
		if merge && mode == configs.QueueCollect && !w.collected {
			// Wait for the burst to end before answering it.
			l.mu.Unlock()
			l.debounce(ctx, w)
			l.mu.Lock()
			w.collected = true
			l.mu.Unlock()
			continue
		}
		w.collected = false
		n := 1
		if merge {
			for n < len(w.queue) && mergeable(w.queue[n]) {
				n++
			}
		}
		batch := w.queue[:n:n]
		w.queue = w.queue[n:]
		l.waiting -= n
		members, refused := l.admitted(batch)
		if len(members) == 0 {
			l.mu.Unlock()
			l.handBack(key, refused)
			continue
		}
		ts := &turnState{members: members}
		if mergeable(members[0]) {
			// A command or scheduled job does not answer interrupted
			// messages; the next person's turn does.
			ts.carried, w.carried = w.carried, nil
		}
		turnCtx, cancel := context.WithCancel(ctx)
		w.cancel = cancel
		w.interruptible = mode == configs.QueueInterrupt && mergeable(members[0])
		if mode == configs.QueueSteer && mergeable(members[0]) {
			w.steering = true
			ts.steer = l.steerFrom(key, w)
		}
		l.mu.Unlock()
		l.handBack(key, refused)

		err := l.handle(turnCtx, ts)
		interrupted := l.turnOver(ctx, w, ts, err)
		cancel()
		if interrupted {
			continue
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			l.log.Error("turn failed", "session", key, "err", err)
		}
		for _, m := range ts.all() {
			l.done(m, err)
		}
		if name, _ := parseCommand(members[0].Content); name == "queue" || name == "new" {
			mode = l.modeChanged(ctx, key, w, members[0])
		}
	}
}

// retire removes the worker of a session whose queue ran out (or whose
// loop is stopping) and reports what it still held. It is called with
// l.mu held and releases it.
func (l *Loop) retire(ctx context.Context, key string, w *worker) {
	delete(l.workers, key)
	if l.cfg.IdleCompact > 0 && !w.foldOnly {
		if l.idle == nil {
			l.idle = idleSessions{}
		}
		l.idle[key] = time.Now()
	}
	// The chat's queue choice is read again when it next speaks (its
	// session is loaded for that turn anyway), so what is remembered
	// stays as many as the chats with a worker.
	delete(l.queueChoices, key)
	if len(l.workers) == 0 {
		close(l.busy)
		l.busy = nil
		// Go maps keep their buckets when entries go: start small again
		// after a peak of busy chats.
		l.workers, l.queueChoices = map[string]*worker{}, nil
	}
	carried, rest, over := w.carried, w.queue, w.finished
	w.carried, w.queue, w.finished = nil, nil, nil
	l.waiting -= len(rest)
	l.mu.Unlock()
	for _, f := range over {
		l.done(f.m, f.err)
	}
	for _, m := range carried {
		// Interrupted, and the turn that was to answer them was
		// handed back (cluster): they come again too.
		err := ctx.Err()
		if err == nil {
			err = ErrHandedBack
		}
		l.done(m, err)
	}
	for _, m := range rest {
		l.done(m, ctx.Err())
	}
}

// admitted splits a batch into the messages Admit lets run and those it
// refuses.
func (l *Loop) admitted(batch []bus.Inbound) (members, refused []bus.Inbound) {
	for _, m := range batch {
		if l.cfg.Admit != nil && !l.cfg.Admit(m) {
			refused = append(refused, m)
		} else {
			members = append(members, m)
		}
	}
	return members, refused
}

// turnOver updates w after the turn ts ended with err, and reports whether
// a newer message interrupted it (its messages are then answered by the
// next turn).
func (l *Loop) turnOver(ctx context.Context, w *worker, ts *turnState, err error) (interrupted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w.cancel, w.steering, w.interruptible = nil, false, false
	// Steered messages the turn did not pick up (it was giving its
	// final answer) are the next turn.
	w.queue = append(w.steered, w.queue...)
	w.steered = nil
	interrupted = w.interrupted && errors.Is(err, context.Canceled) && ctx.Err() == nil
	w.interrupted = false
	if interrupted {
		// Answered by the next turn: the history holds what this one
		// stored; a message it did not store joins the next turn.
		if ts.saved {
			w.carried = append(w.carried, ts.all()...)
		} else {
			w.carried = append(w.carried, ts.carried...)
			w.queue = append(append(ts.members, ts.taken...), w.queue...)
			l.waiting += len(ts.members) + len(ts.taken)
		}
	}
	return interrupted
}

// modeChanged reads the session's queue mode again after m (/queue or
// /new) changed the chat's choice (or forgot it).
func (l *Loop) modeChanged(ctx context.Context, key string, w *worker, m bus.Inbound) string {
	l.mu.Lock()
	delete(l.queueChoices, key)
	l.mu.Unlock()
	m.Content = ""
	mode := l.resolveMode(ctx, m)
	l.mu.Lock()
	w.mode = mode
	l.mu.Unlock()
	return mode
}

// handBack gives messages Admit refused back to the inbox.
func (l *Loop) handBack(key string, refused []bus.Inbound) {
	for _, m := range refused {
		l.log.Info("message handed back: an earlier one of its session comes first", "session", key)
		l.done(m, ErrHandedBack)
	}
}

func (l *Loop) done(m bus.Inbound, err error) {
	if err == nil && l.cfg.Recall != nil {
		l.cfg.Recall.Notify()
	}
	if l.cfg.OnTurnDone != nil {
		l.cfg.OnTurnDone(m, err)
	}
}
