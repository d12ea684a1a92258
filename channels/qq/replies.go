package qq

import (
	"strings"
	"sync"
	"time"
)

// Passive reply rules of the QQ API: a message may be answered (with its
// msg_id) at most maxPassive times, within a window that depends on the
// chat; every answer to one msg_id needs a msg_seq not used before.
const (
	maxPassive       = 5
	c2cReplyWindow   = 60 * time.Minute
	groupReplyWindow = 5 * time.Minute
	// rememberReplies bounds how many msg_ids the counter keeps.
	rememberReplies = 2000
)

// replies counts msg_seq per msg_id. It is safe for concurrent use.
type replies struct {
	now func() time.Time

	mu     sync.Mutex
	m      map[string]*reply
	order  []string          // oldest first, for eviction
	latest map[string]string // chat -> the last message received in it
}

type reply struct {
	at   time.Time // when the message arrived
	chat string
	seq  int // the last msg_seq used
}

func newReplies() *replies {
	return &replies{now: time.Now, m: map[string]*reply{}, latest: map[string]string{}}
}

// received notes an inbound message, which starts its reply window.
func (r *replies) received(msgID, chat string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.m[msgID]; !ok {
		r.add(msgID, &reply{at: at, chat: chat})
	}
	r.latest[chat] = msgID
}

// last returns the latest message received in chat ("" if none is
// remembered), which a message that answers nothing in particular (a
// pairing code, a cron job's output) replies to while it can.
func (r *replies) last(chat string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.latest[chat]
}

func (r *replies) add(msgID string, rp *reply) {
	if len(r.order) >= rememberReplies {
		old := r.m[r.order[0]]
		if old != nil && r.latest[old.chat] == r.order[0] {
			delete(r.latest, old.chat)
		}
		delete(r.m, r.order[0])
		r.order = r.order[1:]
	}
	r.m[msgID] = rp
	r.order = append(r.order, msgID)
}

// next returns the msg_seq for one more passive reply to msgID in chat,
// or ok false when the message can no longer be answered passively (five
// replies used, or its window passed): the caller then sends an active
// message. A msg_id never seen (the gateway restarted) counts from now.
func (r *replies) next(msgID, chat string) (seq int, ok bool) {
	if msgID == "" {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rp := r.m[msgID]
	if rp == nil {
		rp = &reply{at: r.now(), chat: chat}
		r.add(msgID, rp)
	}
	window := c2cReplyWindow
	if strings.HasPrefix(chat, groupPrefix) {
		window = groupReplyWindow
	}
	if rp.seq >= maxPassive || r.now().Sub(rp.at) > window {
		return 0, false
	}
	rp.seq++
	return rp.seq, true
}
