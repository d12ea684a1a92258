package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/providers"
)

// MetaQueueMode is the session metadata key holding the chat's /queue
// choice. It is persisted with the session, so the choice survives a
// restart.
const MetaQueueMode = "queueMode"

// defaultCollect is the pause that ends a burst in collect mode when the
// config sets none.
const defaultCollect = 1500 * time.Millisecond

// collectCapFactor bounds a burst: someone who never pauses is answered
// after this many windows anyway.
const collectCapFactor = 5

// turnState is one turn's messages as the worker hands them to handle:
// members are answered by it (merged into one user message when there are
// several), carried are the messages of turns interrupted for it (already in
// the history, or merged in front when their turn stored nothing), taken
// are the messages steered into it. All of them are done when it is.
type turnState struct {
	members []bus.Inbound
	carried []bus.Inbound
	// steer, when set, hands the running turn the messages written since
	// its last model call (steer mode).
	steer func() []bus.Inbound
	taken []bus.Inbound
	// dropped are members an inbound hook vetoed: answered by nothing,
	// but done with the turn.
	dropped []bus.Inbound
	// end, when set, collects what the turn_end hooks are told.
	end *turnEnd
	// saved is set once the turn stored its user message.
	saved bool
}

// all lists every message the turn answers, oldest first.
func (ts *turnState) all() []bus.Inbound {
	out := make([]bus.Inbound, 0, len(ts.carried)+len(ts.members)+len(ts.taken)+len(ts.dropped))
	out = append(out, ts.carried...)
	out = append(out, ts.members...)
	out = append(out, ts.taken...)
	return append(out, ts.dropped...)
}

// storedIDs is the InboundID stored on the turn's user message: the ids of
// every message it answers, one per line, so any of them delivered again
// after a crash is recognised.
func (ts *turnState) storedIDs() string {
	var ids []string
	for _, m := range ts.carried {
		if id := inboundID(m); id != "" {
			ids = append(ids, id)
		}
	}
	for _, m := range ts.members {
		if id := inboundID(m); id != "" {
			ids = append(ids, id)
		}
	}
	return strings.Join(ids, "\n")
}

// lookupID is the id the turn is looked up by in the session (the first
// member's).
func (ts *turnState) lookupID() string {
	for _, m := range ts.members {
		if id := inboundID(m); id != "" {
			return id
		}
	}
	return ""
}

// splitStored moves the members of ts that history holds already to its
// carried messages, when some but not all of them are stored. It reports
// whether it moved any.
func splitStored(ts *turnState, history []providers.Message) bool {
	var fresh, stored []bus.Inbound
	for _, m := range ts.members {
		if id := inboundID(m); id != "" && storedAt(history, id) >= 0 {
			stored = append(stored, m)
		} else {
			fresh = append(fresh, m)
		}
	}
	if len(stored) == 0 || len(fresh) == 0 {
		return false
	}
	ts.carried = append(ts.carried, stored...)
	ts.members = fresh
	return true
}

// idIn reports whether the stored InboundID (one id per line) holds id.
func idIn(stored, id string) bool {
	if stored == id {
		return true
	}
	if !strings.Contains(stored, "\n") {
		return false
	}
	for part := range strings.SplitSeq(stored, "\n") {
		if part == id {
			return true
		}
	}
	return false
}

// mergeable reports whether m may be steered, collected or interrupt a
// turn: a person's plain message. Commands, scheduled and internal
// messages always wait their turn.
func mergeable(m bus.Inbound) bool {
	if !m.FromPerson() || m.Ephemeral || m.Background {
		return false
	}
	name, _ := parseCommand(m.Content)
	return name == ""
}

// mergeInbound makes one message of a burst: the texts one per line, the
// attachments together, replies going to the latest message.
func mergeInbound(ms []bus.Inbound) bus.Inbound {
	if len(ms) == 1 {
		return ms[0]
	}
	m := ms[len(ms)-1]
	texts := make([]string, 0, len(ms))
	var media []bus.Media
	for _, x := range ms {
		if x.Content != "" {
			texts = append(texts, x.Content)
		}
		media = append(media, x.Media...)
	}
	m.Content = strings.Join(texts, "\n")
	m.Media = media
	return m
}

// queueMode is the mode of m's chat: the chat's /queue choice, else the
// binding's, else the configured one for direct or group chats.
func (l *Loop) queueMode(choice string, m bus.Inbound) string {
	switch {
	case configs.ValidQueueMode(choice):
		return choice
	case configs.ValidQueueMode(m.QueueMode):
		return m.QueueMode
	}
	return l.cfg.Queue.For(m.IsGroup)
}

// resolveMode returns the mode of m's chat. The chat's /queue choice is
// read from its session once and then remembered (every turn refreshes
// it), so a worker starting does not cost a store read.
func (l *Loop) resolveMode(ctx context.Context, m bus.Inbound) string {
	if m.Ephemeral {
		return l.queueMode("", m)
	}
	key := m.Key()
	l.mu.Lock()
	choice, known := l.queueChoices[key]
	l.mu.Unlock()
	if !known {
		sess, err := l.cfg.Store.Load(ctx, key)
		if err != nil {
			l.log.Warn("reading the chat's queue mode failed; using the configured one", "session", key, "err", err)
			return l.queueMode("", m)
		}
		choice = l.rememberQueueChoice(sess)
	}
	return l.queueMode(choice, m)
}

// rememberQueueChoice notes the /queue choice stored in sess and returns
// it.
func (l *Loop) rememberQueueChoice(sess *session.Session) string {
	choice, _ := sess.Meta(MetaQueueMode).(string)
	l.mu.Lock()
	if l.queueChoices == nil {
		l.queueChoices = map[string]string{}
	}
	l.queueChoices[sess.Key] = choice
	l.mu.Unlock()
	return choice
}

func (l *Loop) collectWindow() time.Duration {
	if ms := l.cfg.Queue.CollectMs; ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return defaultCollect
}

// debounce waits until the session's burst is over: collectWindow without
// a new message (a new one restarts the wait), at most collectCapFactor
// windows in all, a /stop, or ctx ends.
func (l *Loop) debounce(ctx context.Context, w *worker) {
	window := l.collectWindow()
	hardStop := time.Now().Add(collectCapFactor * window)
	for {
		l.mu.Lock()
		wait := time.Until(w.lastArrival.Add(window))
		if len(w.queue) == 0 {
			wait = 0 // a /stop emptied it
		}
		l.mu.Unlock()
		if rest := time.Until(hardStop); rest < wait {
			wait = rest
		}
		if wait <= 0 {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-w.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// steerFrom returns the steer function of a turn in steer mode: it hands
// over the messages Submit parked for the running turn (those Admit
// refuses go back to the inbox).
func (l *Loop) steerFrom(key string, w *worker) func() []bus.Inbound {
	return func() []bus.Inbound {
		l.mu.Lock()
		got := w.steered
		w.steered = nil
		l.waiting -= len(got)
		l.mu.Unlock()
		if l.cfg.Admit == nil {
			return got
		}
		var admitted, refused []bus.Inbound
		for _, m := range got {
			if len(refused) == 0 && l.cfg.Admit(m) {
				admitted = append(admitted, m)
			} else {
				refused = append(refused, m)
			}
		}
		l.handBack(key, refused)
		return admitted
	}
}

// steerMessages turns steered messages into the user messages the model
// sees (voice notes transcribed), and records them as taken by the turn.
func (l *Loop) steerMessages(ctx context.Context, ts *turnState) func() []providers.Message {
	if ts.steer == nil {
		return nil
	}
	return func() []providers.Message {
		got := ts.steer()
		if len(got) == 0 {
			return nil
		}
		l.transcribeAll(ctx, got)
		ts.taken = append(ts.taken, got...)
		out := make([]providers.Message, 0, len(got))
		for _, m := range got {
			out = append(out, l.cfg.Builder.UserMessage(m))
		}
		return out
	}
}

// queueCommand is /queue: show the chat's mode, set it, or reset it.
func (l *Loop) queueCommand(ctx context.Context, m bus.Inbound, args string) error {
	sess, err := l.commandSession(ctx, m)
	if err != nil {
		return err
	}
	choice, _ := sess.Meta(MetaQueueMode).(string)
	arg := strings.ToLower(strings.TrimSpace(args))
	if arg == "" {
		how := "configured for this chat"
		if configs.ValidQueueMode(choice) {
			how = "chosen with /queue"
		}
		l.reply(ctx, m, fmt.Sprintf("Queue mode: %s (%s). Modes: queue (one answer per message, in order), steer (a message written during an answer joins it), collect (a burst of messages gets one answer), interrupt (a new message stops the answer and starts over with everything). Switch with /queue <mode>; /queue reset goes back.", l.queueMode(choice, m), how))
		return nil
	}
	if m.IsGroup && !m.Admin {
		l.reply(ctx, m, "Only an admin of this channel may change the queue mode in a group.")
		return nil
	}
	if arg == "reset" {
		if err := l.cfg.Store.SetMetadata(ctx, sess, MetaQueueMode, nil); err != nil {
			l.reply(ctx, m, "Sorry, I could not save the queue mode.")
			return err
		}
		l.rememberQueueChoice(sess)
		l.reply(ctx, m, fmt.Sprintf("Queue mode reset to %s.", l.queueMode("", m)))
		return nil
	}
	if !configs.ValidQueueMode(arg) {
		l.reply(ctx, m, fmt.Sprintf("Unknown queue mode %q. Available: %s.", arg, strings.Join(configs.QueueModes, ", ")))
		return nil
	}
	if err := l.cfg.Store.SetMetadata(ctx, sess, MetaQueueMode, arg); err != nil {
		l.reply(ctx, m, "Sorry, I could not save the queue mode.")
		return err
	}
	l.rememberQueueChoice(sess)
	l.reply(ctx, m, fmt.Sprintf("Queue mode set to %s for this chat.", arg))
	return nil
}
