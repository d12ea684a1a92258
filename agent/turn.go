// One turn: a batch of a session's messages, through a slash command or
// the Runner, to the saved session and the replies. The loop's lifecycle
// and its per-session workers are in loop.go.

package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// handle processes one turn: a slash command or an LLM turn.
func (l *Loop) handle(ctx context.Context, ts *turnState) error {
	if hooking(l.cfg.Hooks, HookInbound) && !l.inboundHooks(ctx, ts) {
		return nil
	}
	if len(ts.members) == 1 && len(ts.carried) == 0 {
		m := ts.members[0]
		name, args := parseCommand(m.Content)
		switch {
		case name == "goal" && l.cfg.Goals != nil:
			text, run := l.goalCommand(ctx, args, m)
			if !run {
				return nil
			}
			ts.members[0].Content = text
		case name != "":
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
		l.transcribeAll(ctx, ts.members)
		m = mergeInbound(ts.members)
		return l.runTurn(ctx, m, &session.Session{Key: m.Key()}, ephemeralHistory(m.History), false, ts)
	}
	sess, err := l.cfg.Store.Load(ctx, m.Key())
	if err != nil {
		l.publish(ctx, m, bus.Outbound{Kind: bus.KindMessage, Content: "Sorry, I could not load this conversation. Please try again.", Final: true, IsError: true})
		return err
	}
	l.rememberQueueChoice(sess)
	if o := sess.OriginValue(m.Channel, m.ChatID); o != nil && m.Channel != "" {
		if err := l.cfg.Store.SetMetadata(ctx, sess, session.MetaOrigin, o); err != nil {
			l.log.Warn("recording the session's chat failed", "session", sess.Key, "err", err)
		}
	}
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
	// Voice notes are transcribed once it is clear the turn runs: the
	// transcript is in the user message the model sees and the session
	// stores. Messages of an interrupted turn keep theirs.
	l.transcribeAll(ctx, ts.members)
	m = mergeInbound(ts.members)
	if ttl := l.cfg.SessionTTL; ttl > 0 && sess.Len() > 0 && time.Since(sess.Updated()) >= ttl {
		// Quiet past its time to live: the conversation goes to memory
		// and the archive, as with /new, and this message starts a fresh
		// one.
		l.log.Info("conversation idle past sessionTtlMinutes; starting a new one", "session", sess.Key, "idle", time.Since(sess.Updated()).Round(time.Minute))
		if err := l.archive(consolidationContext(ctx, m.Channel, m.ChatID, m.SenderID, sess.Key, m.Admin), sess); err != nil {
			l.log.Warn("archiving the expired conversation failed; it goes on", "session", sess.Key, "err", err)
		}
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
	return l.runTurn(ctx, m, sess, history, rerun, ts)
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
	saveCtx := context.WithoutCancel(ctx) // saving and replying survive /stop
	res, runErr := l.runStreaming(runCtx, saveCtx, rp, l.runnerFor(m, sess), msgs, ts, release)

	runErr = l.saveAfter(saveCtx, m, sess, msgs[len(msgs)-1], res, runErr, rerun, ts)
	if ts.end != nil {
		ts.end.record(rp, res)
	}
	if runErr != nil {
		if errors.Is(runErr, context.Canceled) || errors.Is(runErr, session.ErrConflict) ||
			(errors.Is(runErr, ErrNotSaved) && rp.answered) {
			// Stopped, or the session moved to another worker (cluster
			// mode), which answers instead, or the user has the answer and
			// only the saving failed (the turn is replayed at the next
			// start, see ErrNotSaved).
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

// runTurn is run with the turn_end hook told how it ended.
func (l *Loop) runTurn(ctx context.Context, m bus.Inbound, sess *session.Session, history []providers.Message, rerun bool, ts *turnState) error {
	if !hooking(l.cfg.Hooks, HookTurnEnd) {
		return l.run(ctx, m, sess, history, rerun, ts)
	}
	var res turnEnd
	ts.end = &res
	err := l.run(ctx, m, sess, history, rerun, ts)
	l.turnEndHooks(context.WithoutCancel(ctx), m, &res, err)
	return err
}

// runStreaming runs the turn's model calls with rp publishing what they
// say. However the run ends — answered, stopped, interrupted by a newer
// message, failed, or its context gone — a stream it left open is closed
// before runStreaming returns, so the dispatcher never holds a stream
// nobody ends (and the error reply, if any, comes after it). endCtx must
// outlive ctx. release gives back the turn's slot, before the stream is
// closed: publishing may wait for room on the bus.
func (l *Loop) runStreaming(ctx, endCtx context.Context, rp *replies, r *Runner, msgs []providers.Message, ts *turnState, release func()) (*RunResult, error) {
	defer rp.closeStream(endCtx)
	defer release()
	return r.RunSteered(ctx, msgs, func(ev Event) { rp.emit(ctx, ev) }, l.steerMessages(ctx, ts))
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
		l.log.Error("saving turn failed; it is run again at the next start", "session", sess.Key, "err", err)
		if runErr == nil {
			runErr = fmt.Errorf("%w: %w", ErrNotSaved, err)
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
	// open is set once a delta of streamID was published and until its
	// end is; sofar is the text of those deltas.
	open   bool
	sofar  strings.Builder
	usage  bus.Usage
	spoken string // the final answer as published, for a voice reply
	// answered is set once the final answer was published.
	answered bool
}

func (r *replies) emit(ctx context.Context, ev Event) {
	switch ev.Kind {
	case EventDelta:
		// Once the message tool spoke, hold the stream: the final reply
		// may repeat it and is then not sent at all.
		if !r.m.Background && !r.turn.SentAny() && !hooking(r.l.cfg.Hooks, HookBeforeReply) {
			r.open = true
			r.sofar.WriteString(ev.Text)
			r.l.publish(ctx, r.m, bus.Outbound{Kind: bus.KindDelta, Content: ev.Text, StreamID: r.streamID})
		}
	case EventStreamEnd:
		defer r.nextStream(ctx)
		r.usage.PromptTokens += ev.Usage.PromptTokens
		r.usage.CompletionTokens += ev.Usage.CompletionTokens
		r.usage.CachedTokens += ev.Usage.CacheReadTokens
		r.usage.ReasoningTokens += ev.Usage.ReasoningTokens
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
				r.answered = true
				u := r.usage
				out.Usage = &u
				if ev.Text != "" {
					r.spoken = text
				}
			}
			r.open = false
			sent := r.l.publish(ctx, r.m, out)
			if ev.Final && r.spoken != "" {
				r.spoken = sent
			}
		}
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

// nextStream starts the stream of the next model call, closing the
// current one first if its end was not published (the reply was held
// back: the message tool said it already).
func (r *replies) nextStream(ctx context.Context) {
	r.closeStream(ctx)
	r.streamID = newID()
	r.sofar.Reset()
}

// closeStream ends the current stream, if it is open, as interrupted: the
// channel finishes what it shows of the text so far and sends nothing new.
func (r *replies) closeStream(ctx context.Context) {
	if !r.open {
		return
	}
	r.open = false
	r.l.publish(ctx, r.m, bus.Outbound{Kind: bus.KindStreamEnd, Content: r.sofar.String(), StreamID: r.streamID, Interrupted: true})
}

// saveTurn appends a turn's messages to its session; nothing to save
// (an ephemeral turn) touches no store. A failed write is tried again with
// backoff for up to SaveRetry (a disk full for a moment); a conflict (the
// session moved to another worker) is final at once.
func (l *Loop) saveTurn(ctx context.Context, sess *session.Session, msgs []providers.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	deadline := time.Now().Add(l.cfg.SaveRetry)
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := l.cfg.Store.Append(ctx, sess, msgs...)
		if err == nil || errors.Is(err, session.ErrConflict) || time.Now().Add(wait).After(deadline) {
			if err == nil && attempt > 1 {
				l.log.Info("turn saved after the store recovered", "session", sess.Key, "attempts", attempt)
			}
			return err
		}
		if attempt == 1 {
			l.log.Warn("saving turn failed; trying again", "session", sess.Key, "err", err)
		}
		t := time.NewTimer(wait + mrand.N(wait/4))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
		wait = min(wait*2, 5*time.Second)
	}
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
// owns retries of the platform send). It is the one door of everything the
// agent says to a chat (replies, deltas, tool hints, notices, errors), so
// it masks the redactor's secrets in every kind; a secret split across
// deltas is caught before, by the runner's stream redaction.
func (l *Loop) publish(ctx context.Context, m bus.Inbound, out bus.Outbound) (sent string) {
	return l.publishWith(ctx, m, out, true)
}

// publishWith is publish; hooks false skips the before_reply hooks.
func (l *Loop) publishWith(ctx context.Context, m bus.Inbound, out bus.Outbound, hooks bool) (sent string) {
	if l.cfg.Runner != nil {
		out.Content = l.cfg.Runner.Redact.Secrets(out.Content)
	}
	if hooks && hooking(l.cfg.Hooks, HookBeforeReply) && isReply(out) {
		out.Content = l.replyHooks(ctx, m, out)
	}
	out.Channel, out.ChatID, out.SessionKey, out.Turn = m.Channel, m.ChatID, m.Key(), m.ID
	if out.Kind == bus.KindStreamEnd || out.Kind == bus.KindMessage {
		out.ReplyTo = m.MessageID
	}
	if out.Metadata == nil && len(m.Metadata) > 0 {
		out.Metadata = m.Metadata
	}
	if out.ThreadID == "" {
		out.ThreadID = m.ThreadID
	}
	if err := l.cfg.Out.PublishOutbound(ctx, out); err != nil {
		l.log.Warn("publish failed", "session", m.Key(), "kind", out.Kind.String(), "err", err)
	}
	return out.Content
}

// reply sends a final plain message.
func (l *Loop) reply(ctx context.Context, m bus.Inbound, text string) {
	l.publish(ctx, m, bus.Outbound{Kind: bus.KindMessage, Content: text, Final: true})
}

// notice is reply for the loop's own answers given in Submit (/stop,
// /approve, a refused message): they skip the before_reply hooks, which
// may take up to their timeout, because every chat's messages come
// through Submit and must not wait on one chat's hook.
func (l *Loop) notice(ctx context.Context, m bus.Inbound, text string) {
	l.publishWith(ctx, m, bus.Outbound{Kind: bus.KindMessage, Content: text, Final: true}, false)
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
