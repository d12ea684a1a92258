package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/bus"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
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
	Consolidator        Consolidator // optional
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
	Log   *slog.Logger
}

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
	busy       chan struct{} // closed when the last worker exits; nil while idle
	lastActive [2]string     // channel, chat id of the latest message from a person
	wg         sync.WaitGroup

	presets presetRunners
	// queueChoices remembers each chat's /queue choice ("" none) by
	// session key while it has a worker, read once from the session and
	// refreshed by every turn.
	queueChoices map[string]string
}

// worker is a session's state; every field is guarded by Loop.mu.
type worker struct {
	queue  []bus.Inbound
	cancel context.CancelFunc // of the running turn, nil between turns
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
}

// NewLoop returns a loop; Run starts it.
func NewLoop(cfg LoopConfig) *Loop {
	if cfg.MaxConcurrentTurns <= 0 {
		cfg.MaxConcurrentTurns = 8
	}
	if cfg.MaxToolResultChars <= 0 {
		cfg.MaxToolResultChars = 16000
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
	if name, _ := parseCommand(m.Content); name == "stop" {
		n := l.StopSession(m.Key())
		l.reply(ctx, m, stopReply(n))
		l.done(m, nil)
		return
	}
	key := m.Key()
	l.mu.Lock()
	if m.FromPerson() {
		l.lastActive = [2]string{m.Channel, m.ChatID}
	}
	w, ok := l.workers[key]
	if !ok {
		w = &worker{wake: make(chan struct{}, 1)}
		if len(l.workers) == 0 {
			l.busy = make(chan struct{})
		}
		l.workers[key] = w
	}
	if mergeable(m) {
		w.lastArrival = time.Now()
	}
	if ok && mergeable(m) {
		switch w.mode {
		case configs.QueueSteer:
			if w.steering && len(w.queue) == 0 {
				// The running turn picks it up at its next model call;
				// if there is none, the worker queues it after the turn.
				// Behind older queued messages it waits its turn, so
				// the chat's messages are answered in order.
				w.steered = append(w.steered, m)
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
	l.mu.Unlock()
	if !ok {
		l.wg.Go(func() { l.work(ctx, key, w) })
	}
}

// StopSession cancels the running turn and the queued messages of a
// session, and its sub-agents. It returns how many things it stopped.
func (l *Loop) StopSession(key string) int {
	n := 0
	l.mu.Lock()
	if w, ok := l.workers[key]; ok {
		for _, q := range w.queue {
			l.done(q, context.Canceled)
		}
		for _, q := range w.steered {
			l.done(q, context.Canceled)
		}
		n += len(w.queue) + len(w.steered)
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
	queued := len(w.queue) > 0 // false when a /stop came first
	var first bus.Inbound
	if queued {
		first = w.queue[0]
	}
	l.mu.Unlock()
	mode := configs.QueueFIFO
	if queued {
		mode = l.resolveMode(ctx, first)
	}
	l.mu.Lock()
	w.mode = mode
	l.mu.Unlock()
	for {
		l.mu.Lock()
		if len(w.queue) == 0 || ctx.Err() != nil {
			l.retire(ctx, key, w)
			return
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
	carried, rest := w.carried, w.queue
	w.carried, w.queue = nil, nil
	l.mu.Unlock()
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
	if l.cfg.OnTurnDone != nil {
		l.cfg.OnTurnDone(m, err)
	}
}

// handle processes one turn: a slash command or an LLM turn.
func (l *Loop) handle(ctx context.Context, ts *turnState) error {
	if len(ts.members) == 1 && len(ts.carried) == 0 {
		m := ts.members[0]
		if name, args := parseCommand(m.Content); name != "" {
			if handled, err := l.command(ctx, name, args, m); handled {
				return err
			}
		}
	}
	return l.turnOf(ctx, ts)
}

// replayWindow is how many of a session's latest messages are searched for
// a turn delivered again after a crash (it is always among the last).
const replayWindow = 200

// turn runs m's LLM turn.
func (l *Loop) turn(ctx context.Context, m bus.Inbound) error {
	return l.turnOf(ctx, &turnState{members: []bus.Inbound{m}})
}

// turnOf runs the LLM turn of ts: its members merged into one user message.
func (l *Loop) turnOf(ctx context.Context, ts *turnState) error {
	m := mergeInbound(ts.members)
	if m.Ephemeral {
		// The sender supplied the conversation: nothing is loaded or
		// stored, so there is nothing to consolidate or answer from.
		return l.run(ctx, m, &session.Session{Key: m.Key()}, ephemeralHistory(m.History), false, ts)
	}
	sess, err := l.cfg.Store.Load(ctx, m.Key())
	if err != nil {
		l.publish(ctx, m, bus.Outbound{Kind: bus.KindMessage, Content: "Sorry, I could not load this conversation. Please try again.", Final: true, IsError: true})
		return err
	}
	l.rememberQueueChoice(sess)
	if len(ts.members) > 1 && splitStored(ts, sess.Tail(replayWindow)) {
		// Delivered again after a crash, part of the burst is in the
		// session already (stored by an interrupted turn): the model sees
		// it there, and the turn's user message holds the rest.
		m = mergeInbound(ts.members)
		l.log.Info("part of a merged turn is stored already; answering the rest", "session", sess.Key, "stored", len(ts.carried))
	}
	if reply, ok := answered(sess.Tail(replayWindow), ts.lookupID()); ok {
		// Delivered again after a crash between saving this turn and
		// acknowledging it: answer from the session instead of running
		// (and storing) the turn twice.
		l.log.Info("message already answered before a restart; sending the stored answer", "session", sess.Key, "message_id", m.MessageID)
		if !m.Background {
			l.publish(ctx, m, bus.Outbound{Kind: bus.KindMessage, Content: reply, Final: true})
		}
		return nil
	}
	if c := l.cfg.Consolidator; c != nil {
		consCtx := consolidationContext(ctx, m.Channel, m.ChatID, m.SenderID, sess.Key, m.Admin)
		if err := c.MaybeConsolidate(consCtx, sess); err != nil {
			l.log.Warn("memory consolidation failed; continuing", "session", sess.Key, "err", err)
		}
	}
	history := sess.History(m.MaxHistory)
	rerun := false
	if i := storedAt(history, ts.lookupID()); i >= 0 {
		// Delivered again after a turn interrupted before its answer (a
		// shutdown mid-turn): run it again on the history before it, and
		// store only what the new run adds, not the user message twice.
		history, rerun = history[:i], true
		l.log.Info("running an interrupted turn again", "session", sess.Key, "message_id", m.MessageID)
	}
	return l.run(ctx, m, sess, history, rerun, ts)
}

// ephemeralHistory turns a conversation the sender supplied into model
// messages (text only; roles other than user and assistant are dropped).
func ephemeralHistory(turns []bus.Turn) []providers.Message {
	out := make([]providers.Message, 0, len(turns))
	for _, t := range turns {
		switch t.Role {
		case providers.RoleUser, providers.RoleAssistant:
			out = append(out, providers.Message{Role: t.Role, Content: t.Content})
		}
	}
	return out
}

// run runs the LLM turn of m on history and saves it to sess (unless m is
// Ephemeral); rerun says the user message is stored already.
func (l *Loop) run(ctx context.Context, m bus.Inbound, sess *session.Session, history []providers.Message, rerun bool, ts *turnState) error {
	msgs := l.cfg.Builder.Messages(history, m)
	background := m.Background

	// The cap covers the LLM turn only; saving and replying do not hold a
	// slot another session could use.
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	released := false
	release := func() {
		if !released {
			released = true
			<-l.sem
		}
	}
	defer release()

	if !background {
		l.publish(ctx, m, bus.Outbound{Kind: bus.KindTyping})
	}
	turn := &tools.Turn{}
	rp := &replies{l: l, m: m, turn: turn, streamID: newID()}
	runCtx := tools.WithCallContext(tools.WithTurn(ctx, turn), tools.CallContext{
		Channel: m.Channel, ChatID: m.ChatID, SessionKey: sess.Key, MessageID: m.MessageID,
		FromCron: m.Source == bus.SourceCron, SubAgent: false,
		SenderID: m.SenderID, Source: m.Source.String(), Admin: m.Admin,
	})
	res, runErr := l.runnerFor(m, sess).RunSteered(runCtx, msgs, func(ev Event) { rp.emit(ctx, ev) }, l.steerMessages(ts))
	release()

	saveCtx := context.WithoutCancel(ctx) // saving and replying survive /stop
	runErr = l.saveAfter(saveCtx, m, sess, msgs[len(msgs)-1], res, runErr, rerun, ts)
	if runErr != nil {
		if errors.Is(runErr, context.Canceled) || errors.Is(runErr, session.ErrConflict) {
			// Stopped, or the session moved to another worker (cluster
			// mode), which answers instead.
			return runErr
		}
		l.publish(saveCtx, m, bus.Outbound{Kind: bus.KindMessage, Content: failureReply(runErr), Final: true, IsError: true})
		return runErr
	}
	if rp.spoken != "" && l.wantsVoice(m, sess) {
		l.speak(saveCtx, m, rp.spoken)
	}
	return nil
}

// saveAfter saves whatever the turn produced, even when it was stopped
// or failed, so the conversation on disk matches what the user saw; ctx
// must survive /stop. It returns the turn's error, or the saving's.
func (l *Loop) saveAfter(ctx context.Context, m bus.Inbound, sess *session.Session, user providers.Message, res *RunResult, runErr error, rerun bool, ts *turnState) error {
	var produced []providers.Message
	var injected []int
	if res != nil {
		produced, injected = res.Messages, res.Injected
	}
	save := l.sanitizeTurn(m, user, produced, ts, injected)
	if rerun {
		save = save[1:] // the user message is stored already
	}
	if m.Ephemeral {
		save = nil
	}
	if err := l.saveTurn(ctx, sess, save); err != nil {
		l.log.Error("saving turn failed", "session", sess.Key, "err", err)
		if runErr == nil {
			runErr = err
		}
	} else {
		ts.saved = true
	}
	return runErr
}

// replies publishes what a turn's runner emits to the turn's chat:
// streamed text, tool hints and typing (none for a background turn, which
// speaks only when it has news), and the final reply with the turn's
// usage.
type replies struct {
	l        *Loop
	m        bus.Inbound
	turn     *tools.Turn
	streamID string
	usage    bus.Usage
	spoken   string // the final answer as published, for a voice reply
}

func (r *replies) emit(ctx context.Context, ev Event) {
	switch ev.Kind {
	case EventDelta:
		// Once the message tool spoke, hold the stream: the final reply
		// may repeat it and is then not sent at all.
		if !r.m.Background && !r.turn.SentAny() {
			r.l.publish(ctx, r.m, bus.Outbound{Kind: bus.KindDelta, Content: ev.Text, StreamID: r.streamID})
		}
	case EventStreamEnd:
		r.usage.PromptTokens += ev.Usage.PromptTokens
		r.usage.CompletionTokens += ev.Usage.CompletionTokens
		if r.m.Background && (!ev.Final || bus.IsSilent(ev.Text)) {
			break // background runs speak only when they have news
		}
		if ev.Final && r.turn.AlreadySent(ev.Text) && r.m.Source != bus.SourceAPI {
			// The message tool already delivered this reply. An API
			// caller still gets it: its answer is the final reply.
			break
		}
		if ev.Text != "" || ev.Final {
			text := ev.Text
			if ev.Final && text == "" {
				text = "I have no reply to that. Could you rephrase?"
			}
			out := bus.Outbound{Kind: bus.KindStreamEnd, Content: text, StreamID: r.streamID, Final: ev.Final}
			if ev.Final {
				u := r.usage
				out.Usage = &u
				if ev.Text != "" {
					r.spoken = text
				}
			}
			r.l.publish(ctx, r.m, out)
		}
		r.streamID = newID()
	case EventToolHint:
		if !r.m.Background {
			r.l.publish(ctx, r.m, bus.Outbound{Kind: bus.KindToolHint, Content: ev.Text})
		}
	case EventWaiting:
		if !r.m.Background {
			r.l.publish(ctx, r.m, bus.Outbound{Kind: bus.KindTyping})
		}
	}
}

// saveTurn appends a turn's messages to its session; nothing to save
// (an ephemeral turn) touches no store.
func (l *Loop) saveTurn(ctx context.Context, sess *session.Session, msgs []providers.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	return l.cfg.Store.Append(ctx, sess, msgs...)
}

// failureReply tells the user what went wrong without internals or secrets.
func failureReply(err error) string {
	var (
		pe *providers.Error
		se *providers.SignInError
	)
	var told interface{ UserMessage() string } // a refusal that explains itself (budgets)
	switch {
	case errors.As(err, &told):
		return told.UserMessage()
	case errors.As(err, &se):
		return "Sorry, I can't reach the model: the " + se.Provider + " sign-in " + signInReason(se) + ". The owner can fix it by running `nanobot provider login " + se.Provider + "`."
	case errors.Is(err, context.DeadlineExceeded):
		return "Sorry, the model took too long to answer. Please try again."
	case errors.As(err, &pe):
		switch {
		case pe.Provider == "none":
			return pe.Message
		case pe.StatusCode == 401 || pe.StatusCode == 403:
			return "Sorry, the model provider rejected the API key (" + pe.Provider + "). Please check the key in config.json."
		case pe.StatusCode == 429:
			return "Sorry, the model provider is rate-limiting or out of quota (" + pe.Provider + "). Please try again later."
		case pe.Transient:
			return "Sorry, the model provider is unavailable right now (" + pe.Provider + "). Please try again in a moment."
		}
		return "Sorry, the model provider returned an error (" + pe.Provider + ")."
	}
	return "Sorry, something went wrong while answering. Please try again."
}

func signInReason(se *providers.SignInError) string {
	if se.Reason == "" {
		return "is missing"
	}
	return "failed (" + se.Reason + ")"
}

// publish sends to the message's chat; a failure is logged (the dispatcher
// owns retries of the platform send).
func (l *Loop) publish(ctx context.Context, m bus.Inbound, out bus.Outbound) {
	out.Channel, out.ChatID, out.SessionKey, out.Turn = m.Channel, m.ChatID, m.Key(), m.ID
	if out.Kind == bus.KindStreamEnd || out.Kind == bus.KindMessage {
		out.ReplyTo = m.MessageID
	}
	if out.Metadata == nil && len(m.Metadata) > 0 {
		out.Metadata = m.Metadata
	}
	if err := l.cfg.Out.PublishOutbound(ctx, out); err != nil {
		l.log.Warn("publish failed", "session", m.Key(), "kind", out.Kind.String(), "err", err)
	}
}

// reply sends a final plain message.
func (l *Loop) reply(ctx context.Context, m bus.Inbound, text string) {
	l.publish(ctx, m, bus.Outbound{Kind: bus.KindMessage, Content: text, Final: true})
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
