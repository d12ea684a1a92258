package main

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
)

// soakReplyRe finds a whole marker in what the bot sent; the brackets make
// sure a partial stream never counts.
var soakReplyRe = regexp.MustCompile(`\[soak-(\d+)-(\d+)\]`)

// The acknowledgements of /stop (agent/loop.go).
const (
	ackStopped = "Stopped."
	ackNothing = "Nothing to stop."
)

// userMsg is one message a soak user sent: a question carrying its marker,
// or /stop.
type userMsg struct {
	n    int // sequence number in its chat (questions only)
	stop bool
	at   time.Time

	answered bool // questions: a bot message showed the marker
	answerAt time.Time
	ack      string // stops: the acknowledgement matched to it
	ackAt    time.Time
}

// botReply is a bot message without a marker that the ledger matches:
// an error reply ("Sorry, ...").
type botReply struct {
	at   time.Time
	mid  int64
	text string
}

// duplicate is a marker that showed in a second bot message.
type duplicate struct {
	chat       int64
	n          int
	first, dup time.Time
	mids       [2]int64
}

// chatLog is what one chat sent and what the bot answered in it.
type chatLog struct {
	id     int64
	sendMu sync.Mutex // one sender at a time, so the log's order is the platform's

	msgs      []*userMsg
	byN       map[int]*userMsg
	nextN     int
	maxSeen   int
	firstMid  map[int]int64
	dupSeen   map[[2]int64]bool
	dups      []duplicate
	outOfOrd  []string // what showed when
	misrouted []string
	errs      []botReply
	extraAcks int
	final     map[int64]string // bot message id -> its text now
}

// soakLedger follows every chat of the soak.
type soakLedger struct {
	mu    sync.Mutex
	chats map[int64]*chatLog
	ids   []int64
	start time.Time // offsets in details count from here
}

func newSoakLedger(ids []int64, start time.Time) *soakLedger {
	l := &soakLedger{chats: map[int64]*chatLog{}, ids: ids, start: start}
	for _, id := range ids {
		l.chats[id] = &chatLog{id: id, byN: map[int]*userMsg{}, firstMid: map[int]int64{}, dupSeen: map[[2]int64]bool{}, final: map[int64]string{}}
	}
	return l
}

// marker is the text a question of chat carries.
func soakMarker(chat int64, n int) string { return fmt.Sprintf("soak-%d-%d", chat, n) }

// sendQuestion records the next question of chat and sends it with send,
// under the chat's send lock so the log and the platform agree on order.
func (l *soakLedger) sendQuestion(chat int64, send func(text string)) {
	c := l.chats[chat]
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	l.mu.Lock()
	c.nextN++
	m := &userMsg{n: c.nextN, at: time.Now()}
	c.msgs = append(c.msgs, m)
	c.byN[m.n] = m
	l.mu.Unlock()
	send("question " + soakMarker(chat, m.n))
}

// sendStop sends /stop in chat unless one is still unacknowledged there.
func (l *soakLedger) sendStop(chat int64, send func(text string)) bool {
	c := l.chats[chat]
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	l.mu.Lock()
	for _, m := range c.msgs {
		if m.stop && m.ack == "" {
			l.mu.Unlock()
			return false
		}
	}
	c.msgs = append(c.msgs, &userMsg{stop: true, at: time.Now()})
	l.mu.Unlock()
	send("/stop")
	return true
}

// waiting is how many questions of chat are neither answered nor covered
// by an acknowledged "Stopped.".
func (l *soakLedger) waiting(chat int64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.chats[chat]
	n := 0
	stopped := stoppedAfter(c.msgs)
	for i, m := range c.msgs {
		if !m.stop && !m.answered && !stopped[i] {
			n++
		}
	}
	return n
}

// stoppedAfter reports for each message whether a /stop sent after it was
// acknowledged with "Stopped.".
func stoppedAfter(msgs []*userMsg) []bool {
	out := make([]bool, len(msgs))
	later := false
	for i := len(msgs) - 1; i >= 0; i-- {
		out[i] = later
		if msgs[i].stop && msgs[i].ack == ackStopped {
			later = true
		}
	}
	return out
}

// observe takes what the bot sent or edited, in the platform's order.
func (l *soakLedger) observe(sent []telegramtest.Sent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range sent {
		c := l.chats[s.ChatID]
		if c == nil {
			continue
		}
		c.final[s.MessageID] = s.Visible
		for _, m := range soakReplyRe.FindAllStringSubmatch(s.Visible, -1) {
			chat, _ := strconv.ParseInt(m[1], 10, 64)
			n, _ := strconv.Atoi(m[2])
			if chat != c.id {
				c.misrouted = append(c.misrouted, fmt.Sprintf("soak-%d-%d in chat %d", chat, n, c.id))
				continue
			}
			q := c.byN[n]
			if q == nil {
				c.misrouted = append(c.misrouted, fmt.Sprintf("soak-%d-%d answered but never sent", chat, n))
				continue
			}
			if !q.answered {
				q.answered, q.answerAt = true, s.At
				c.firstMid[n] = s.MessageID
				if n < c.maxSeen {
					later := c.byN[c.maxSeen]
					c.outOfOrd = append(c.outOfOrd, fmt.Sprintf("%s (sent at %s) first shown at %s in message %d, after %s (sent at %s) at %s in message %d",
						soakMarker(c.id, n), l.off(q.at), l.off(s.At), s.MessageID, soakMarker(c.id, c.maxSeen), l.off(later.at), l.off(later.answerAt), c.firstMid[c.maxSeen]))
				}
				c.maxSeen = max(c.maxSeen, n)
				continue
			}
			if mid := c.firstMid[n]; mid != s.MessageID && !c.dupSeen[[2]int64{int64(n), s.MessageID}] {
				c.dupSeen[[2]int64{int64(n), s.MessageID}] = true
				c.dups = append(c.dups, duplicate{chat: c.id, n: n, first: q.answerAt, dup: s.At, mids: [2]int64{mid, s.MessageID}})
			}
		}
		if s.Edit {
			continue
		}
		switch text := strings.TrimSpace(s.Visible); {
		case text == ackStopped || text == ackNothing:
			l.matchAck(c, text, s.At)
		case strings.HasPrefix(text, "Sorry"):
			c.errs = append(c.errs, botReply{at: s.At, mid: s.MessageID, text: text})
		}
	}
}

// matchAck gives an acknowledgement to the oldest unacknowledged /stop.
func (l *soakLedger) matchAck(c *chatLog, text string, at time.Time) {
	for _, m := range c.msgs {
		if m.stop && m.ack == "" {
			m.ack, m.ackAt = text, at
			return
		}
	}
	c.extraAcks++ // a /stop replayed after a crash acknowledges twice
}

// chatTally is the outcome of one chat.
type chatTally struct {
	Chat                              int64
	Sent, Answered, Interrupted       int
	Failed, Lost, Duplicates, OutOfOr int
	Stops, StopsAcked, StopsLost      int
	Misrouted                         int
	// LostN and FailedN are the lost and failed sequence numbers; Reasons
	// the error replies that explain the failed ones; LostWhen when each
	// lost one was sent and what the chat showed last before the count.
	LostN, FailedN []int
	Reasons        []string
	LostWhen       []string
}

// tally classifies every message of every chat as it stands:
//
//   - answered: a bot message showed its marker;
//   - interrupted: not answered, and a /stop sent after it was acknowledged
//     with "Stopped." (the gateway said it stopped the chat's running turn
//     and dropped what waited behind it);
//   - failed: not answered, and an error reply ("Sorry, ...") came after it
//     while no later question of the chat had been answered yet (the
//     chat's turns run in order, so that reply can only be its);
//   - lost: none of these (during the run: not settled yet).
//
// A /stop is lost when it got no acknowledgement.
func (l *soakLedger) tally() []chatTally {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []chatTally
	for _, id := range l.ids {
		c := l.chats[id]
		t := chatTally{Chat: id, Duplicates: len(c.dups), OutOfOr: len(c.outOfOrd), Misrouted: len(c.misrouted)}
		var open []*userMsg
		stopped := stoppedAfter(c.msgs)
		for i, m := range c.msgs {
			switch {
			case m.stop:
				t.Stops++
				if m.ack != "" {
					t.StopsAcked++
				} else {
					t.StopsLost++
				}
			case m.answered:
				t.Sent++
				t.Answered++
			case stopped[i]:
				t.Sent++
				t.Interrupted++
			default:
				t.Sent++
				open = append(open, m)
			}
		}
		used := map[*userMsg]bool{}
		for _, e := range c.errs {
			for _, m := range open {
				if used[m] || !m.at.Before(e.at) || c.answeredAfter(m.n, e.at) {
					continue
				}
				used[m] = true
				t.FailedN = append(t.FailedN, m.n)
				t.Reasons = append(t.Reasons, fmt.Sprintf("%s: %q", soakMarker(id, m.n), e.text))
				break
			}
		}
		for _, m := range open {
			if !used[m] {
				t.LostN = append(t.LostN, m.n)
				t.LostWhen = append(t.LostWhen, fmt.Sprintf("%s sent at %s; %s", soakMarker(id, m.n), l.off(m.at), c.around(m.n, l)))
			}
		}
		t.Failed, t.Lost = len(t.FailedN), len(t.LostN)
		out = append(out, t)
	}
	return out
}

// answeredAfter reports whether a question later than n was answered
// before at.
func (c *chatLog) answeredAfter(n int, at time.Time) bool {
	for _, m := range c.msgs {
		if !m.stop && m.n > n && m.answered && m.answerAt.Before(at) {
			return true
		}
	}
	return false
}

// duplicates returns every duplicate, oldest first.
func (l *soakLedger) duplicates() []duplicate {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []duplicate
	for _, id := range l.ids {
		out = append(out, l.chats[id].dups...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].dup.Before(out[j].dup) })
	return out
}

// problems lists the out-of-order and misrouted answers.
func (l *soakLedger) problems() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, id := range l.ids {
		c := l.chats[id]
		for _, d := range c.outOfOrd {
			out = append(out, "out of order: "+d)
		}
		out = append(out, c.misrouted...)
	}
	return out
}

// others are the final texts of bot messages without a marker that are
// neither a /stop acknowledgement nor an error reply (a stream cut short
// by /stop, a notice), counted by text.
func (l *soakLedger) others() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for _, id := range l.ids {
		for _, text := range l.chats[id].final {
			t := strings.TrimSpace(text)
			if soakReplyRe.MatchString(t) || t == ackStopped || t == ackNothing || strings.HasPrefix(t, "Sorry") {
				continue
			}
			if strings.HasPrefix(t, "Here is the answer") {
				t = "(an answer cut short before its marker)"
			}
			out[t]++
		}
	}
	return out
}

// off is t as an offset into the run.
func (l *soakLedger) off(t time.Time) string {
	return fmt.Sprintf("%.1fs", t.Sub(l.start).Seconds())
}

// around says when the questions before and after n were answered.
func (c *chatLog) around(n int, l *soakLedger) string {
	var parts []string
	for _, k := range []int{n - 1, n + 1} {
		q := c.byN[k]
		switch {
		case q == nil:
		case q.answered:
			parts = append(parts, fmt.Sprintf("%s answered at %s (message %d)", soakMarker(c.id, k), l.off(q.answerAt), c.firstMid[k]))
		default:
			parts = append(parts, fmt.Sprintf("%s unanswered", soakMarker(c.id, k)))
		}
	}
	return strings.Join(parts, ", ")
}
