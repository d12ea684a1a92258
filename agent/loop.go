package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/agent/usage"
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
// sessions cost nothing.
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
}

type worker struct {
	queue  []bus.Inbound
	cancel context.CancelFunc // of the running turn, nil between turns
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
		w = &worker{}
		if len(l.workers) == 0 {
			l.busy = make(chan struct{})
		}
		l.workers[key] = w
	}
	// Queue modes (collect, steer, interrupt) plug in here: today every
	// message waits its turn behind the session's earlier ones.
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
		n += len(w.queue)
		w.queue = nil
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
	for {
		l.mu.Lock()
		if len(w.queue) == 0 || ctx.Err() != nil {
			delete(l.workers, key)
			if len(l.workers) == 0 {
				close(l.busy)
				l.busy = nil
			}
			rest := w.queue
			l.mu.Unlock()
			for _, m := range rest {
				l.done(m, ctx.Err())
			}
			return
		}
		m := w.queue[0]
		w.queue = w.queue[1:]
		if l.cfg.Admit != nil && !l.cfg.Admit(m) {
			l.mu.Unlock()
			l.log.Info("message handed back: an earlier one of its session comes first", "session", key)
			l.done(m, ErrHandedBack)
			continue
		}
		turnCtx, cancel := context.WithCancel(ctx)
		w.cancel = cancel
		l.mu.Unlock()

		err := l.handle(turnCtx, m)

		l.mu.Lock()
		w.cancel = nil
		l.mu.Unlock()
		cancel()
		if err != nil && !errors.Is(err, context.Canceled) {
			l.log.Error("turn failed", "session", key, "err", err)
		}
		l.done(m, err)
	}
}

func (l *Loop) done(m bus.Inbound, err error) {
	if l.cfg.OnTurnDone != nil {
		l.cfg.OnTurnDone(m, err)
	}
}

// handle processes one message: a slash command or an LLM turn.
func (l *Loop) handle(ctx context.Context, m bus.Inbound) error {
	if name, args := parseCommand(m.Content); name != "" {
		if handled, err := l.command(ctx, name, args, m); handled {
			return err
		}
	}
	return l.turn(ctx, m)
}

// replayWindow is how many of a session's latest messages are searched for
// a turn delivered again after a crash (it is always among the last).
const replayWindow = 200

func (l *Loop) turn(ctx context.Context, m bus.Inbound) error {
	if m.Ephemeral {
		// The sender supplied the conversation: nothing is loaded or
		// stored, so there is nothing to consolidate or answer from.
		return l.run(ctx, m, &session.Session{Key: m.Key()}, ephemeralHistory(m.History), false)
	}
	sess, err := l.cfg.Store.Load(ctx, m.Key())
	if err != nil {
		l.publish(ctx, m, bus.Outbound{Kind: bus.KindMessage, Content: "Sorry, I could not load this conversation. Please try again.", Final: true, IsError: true})
		return err
	}
	if reply, ok := answered(sess.Tail(replayWindow), inboundID(m)); ok {
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
		if err := c.MaybeConsolidate(ctx, sess); err != nil {
			l.log.Warn("memory consolidation failed; continuing", "session", sess.Key, "err", err)
		}
	}
	history := sess.History(m.MaxHistory)
	rerun := false
	if i := storedAt(history, inboundID(m)); i >= 0 {
		// Delivered again after a turn interrupted before its answer (a
		// shutdown mid-turn): run it again on the history before it, and
		// store only what the new run adds, not the user message twice.
		history, rerun = history[:i], true
		l.log.Info("running an interrupted turn again", "session", sess.Key, "message_id", m.MessageID)
	}
	return l.run(ctx, m, sess, history, rerun)
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
func (l *Loop) run(ctx context.Context, m bus.Inbound, sess *session.Session, history []providers.Message, rerun bool) error {
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
	streamID := newID()
	turn := &tools.Turn{}
	var usage bus.Usage
	spoken := "" // the final answer as published, for a voice reply
	emit := func(ev Event) {
		switch ev.Kind {
		case EventDelta:
			// Once the message tool spoke, hold the stream: the final reply
			// may repeat it and is then not sent at all.
			if !background && !turn.SentAny() {
				l.publish(ctx, m, bus.Outbound{Kind: bus.KindDelta, Content: ev.Text, StreamID: streamID})
			}
		case EventStreamEnd:
			usage.PromptTokens += ev.Usage.PromptTokens
			usage.CompletionTokens += ev.Usage.CompletionTokens
			if background && (!ev.Final || bus.IsSilent(ev.Text)) {
				break // background runs speak only when they have news
			}
			if ev.Final && turn.AlreadySent(ev.Text) && m.Source != bus.SourceAPI {
				// The message tool already delivered this reply. An API
				// caller still gets it: its answer is the final reply.
				break
			}
			if ev.Text != "" || ev.Final {
				text := ev.Text
				if ev.Final && text == "" {
					text = "I have no reply to that. Could you rephrase?"
				}
				out := bus.Outbound{Kind: bus.KindStreamEnd, Content: text, StreamID: streamID, Final: ev.Final}
				if ev.Final {
					u := usage
					out.Usage = &u
					if ev.Text != "" {
						spoken = text
					}
				}
				l.publish(ctx, m, out)
			}
			streamID = newID()
		case EventToolHint:
			if !background {
				l.publish(ctx, m, bus.Outbound{Kind: bus.KindToolHint, Content: ev.Text})
			}
		case EventWaiting:
			if !background {
				l.publish(ctx, m, bus.Outbound{Kind: bus.KindTyping})
			}
		}
	}
	runCtx := tools.WithCallContext(tools.WithTurn(ctx, turn), tools.CallContext{
		Channel: m.Channel, ChatID: m.ChatID, SessionKey: sess.Key, MessageID: m.MessageID,
		FromCron: m.Source == bus.SourceCron, SubAgent: false,
		SenderID: m.SenderID, Source: m.Source.String(), Admin: m.Admin,
	})
	res, runErr := l.runnerFor(m, sess).Run(runCtx, msgs, emit)
	release()

	// Save whatever the turn produced, even when it was stopped or failed,
	// so the conversation on disk matches what the user saw. Saving uses a
	// context that survives /stop.
	saveCtx := context.WithoutCancel(ctx)
	var produced []providers.Message
	if res != nil {
		produced = res.Messages
	}
	save := l.sanitizeTurn(m, msgs[len(msgs)-1], produced)
	if rerun {
		save = save[1:] // the user message is stored already
	}
	if m.Ephemeral {
		save = nil
	}
	if err := l.saveTurn(saveCtx, sess, save); err != nil {
		l.log.Error("saving turn failed", "session", sess.Key, "err", err)
		if runErr == nil {
			runErr = err
		}
	}
	if runErr != nil {
		if errors.Is(runErr, context.Canceled) || errors.Is(runErr, session.ErrConflict) {
			// Stopped, or the session moved to another worker (cluster
			// mode), which answers instead.
			return runErr
		}
		l.publish(saveCtx, m, bus.Outbound{Kind: bus.KindMessage, Content: failureReply(runErr), Final: true, IsError: true})
		return runErr
	}
	if spoken != "" && l.wantsVoice(m, sess) {
		l.speak(saveCtx, m, spoken)
	}
	return nil
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
