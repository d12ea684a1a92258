// Package outbox is the gateway's durable outbound queue (single-process
// mode; the cluster mode's queue is JetStream). Every reply the agent
// publishes is recorded (fsynced) before its turn is marked done in the
// inbox journal; the dispatcher delivers it and records each part the
// platform accepted, with the platform's message reference. On start the
// replies not yet finished are handed back for delivery, skipping the
// parts already sent.
//
// Exactly once: a turn replayed from the inbox after a crash is run again,
// but its final reply is dropped when the outbox holds one for that turn
// already (Add returns ErrAnswered). A streamed message a turn showed is
// remembered (StreamStarted), so the reply of an attempt after a crash
// edits that message instead of sending a second one.
//
// File format: internal/wal records, JSON objects with op add (a message),
// part (a part sent), done (finished), stream (a streamed message),
// answered (a turn with a final reply) and seq (the id counter). Compacted
// on open and after CompactAfter finished messages.
//
// Concurrency: an Outbox is safe for concurrent use. Writes are serialized;
// Add fsyncs (a reply is never lost); the progress records are written
// without fsync (a kill -9 keeps them; a power cut may repeat a send).
//
// A full disk: a progress record that cannot be written is still known in
// memory, and the next write first rewrites the file from memory, so a
// restart after the disk has room again does not repeat what was sent.
package outbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/relay"
	"github.com/nanobot-go/nanobot/internal/option"
	"github.com/nanobot-go/nanobot/internal/wal"
)

// Options configure an Outbox.
type Options struct {
	// CompactAfter compacts after this many finished messages (1,000).
	CompactAfter int
	// AnsweredTurns is how many answered turns are remembered (10,000):
	// a turn is replayed only within moments of its answer.
	AnsweredTurns int
	// StreamTTL is how long a streamed message of an unfinished turn is
	// remembered for the next attempt to finish (24 h).
	StreamTTL time.Duration
	// Open opens the file (default os.OpenFile); tests inject faults.
	Open wal.OpenFunc
	// OnFinished is told how each delivery ended (metrics).
	OnFinished func(relay.Outcome)
	Log        *slog.Logger
}

// ErrAnswered is returned by Add for a final reply to a turn that has one
// recorded already (the turn ran again after a crash).
var ErrAnswered = errors.New("outbox: turn already answered")

type record struct {
	Op      string               `json:"op"`
	ID      string               `json:"id,omitempty"`
	Turn    string               `json:"turn,omitempty"`
	At      time.Time            `json:"at,omitzero"`
	Msg     *bus.Outbound        `json:"msg,omitempty"`
	Part    int                  `json:"part,omitempty"`
	Ref     *channels.MessageRef `json:"ref,omitempty"`
	Outcome string               `json:"outcome,omitempty"`
}

type entry struct {
	msg  bus.Outbound
	at   time.Time
	sent map[int]channels.MessageRef
}

type stream struct {
	ref channels.MessageRef
	at  time.Time
}

var _ relay.DeliveryLog = (*Outbox)(nil)

// Outbox is the durable outbound queue; it is the Dispatcher's
// relay.DeliveryLog.
type Outbox struct {
	opts Options
	log  *slog.Logger

	mu        sync.Mutex
	w         *wal.Log
	seq       int64
	pending   map[string]*entry
	order     []string // ids in arrival order: the pending ones, and finished ones until compact drops them
	answered  map[string]struct{}
	turns     []string // answered, oldest first
	streams   map[string]stream
	nFinished int
	// stale is set when a record could not be written (a full disk): the
	// file then knows less than memory (a part the platform accepted, a
	// reply finished), and a restart would send that again. The next write
	// first rewrites the file from memory.
	stale bool
}

// Open opens (creating) the outbox at path and returns the messages not
// yet finished, oldest first, with their ID set.
func Open(path string, opts Options) (*Outbox, []bus.Outbound, error) {
	option.Positive(&opts.CompactAfter, 1000)
	option.Positive(&opts.AnsweredTurns, 10000)
	option.Positive(&opts.StreamTTL, 24*time.Hour)
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o := &Outbox{opts: opts, log: log, pending: map[string]*entry{}, answered: map[string]struct{}{}, streams: map[string]stream{}}
	w, err := wal.Open(path, wal.Options{Open: opts.Open, Log: log}, o.load)
	if err != nil {
		return nil, nil, fmt.Errorf("outbox: %w", err)
	}
	o.w = w
	atOpen := func() error {
		if !w.Worth(o.liveRecords()) {
			return nil
		}
		return o.compact()
	}
	out := wal.Recovered(log, "outbox", &o.order, o.pending, atOpen, func(e *entry) bus.Outbound { return e.msg })
	return o, out, nil
}

func (o *Outbox) load(payload []byte) error {
	var r record
	if err := json.Unmarshal(payload, &r); err != nil {
		o.log.Warn("outbox: skipping unreadable record", "err", err)
		return nil
	}
	switch r.Op {
	case "add":
		if r.Msg == nil {
			return nil
		}
		if n, err := strconv.ParseInt(r.ID, 10, 64); err == nil && n > o.seq {
			o.seq = n
		}
		m := *r.Msg
		m.ID = r.ID
		o.pending[r.ID] = &entry{msg: m, at: r.At, sent: map[int]channels.MessageRef{}}
		o.order = append(o.order, r.ID)
		if m.Final && m.Turn != "" {
			o.markAnswered(m.Turn)
		}
	case "part":
		if e, ok := o.pending[r.ID]; ok && r.Ref != nil {
			e.sent[r.Part] = *r.Ref
		}
	case "done":
		o.finish(r.ID)
	case "stream":
		if r.Ref != nil {
			o.streams[r.Turn] = stream{ref: *r.Ref, at: r.At}
		}
	case "answered":
		o.markAnswered(r.Turn)
	case "seq":
		if n, err := strconv.ParseInt(r.ID, 10, 64); err == nil && n > o.seq {
			o.seq = n
		}
	}
	return nil
}

func (o *Outbox) markAnswered(turn string) {
	if _, ok := o.answered[turn]; ok {
		return
	}
	o.answered[turn] = struct{}{}
	o.turns = append(o.turns, turn)
	if len(o.turns) > o.opts.AnsweredTurns {
		delete(o.answered, o.turns[0])
		o.turns = o.turns[1:]
	}
}

// finish forgets a finished message; a finished stream end also ends its
// turn's streamed message, unless the stream was interrupted: a turn cut
// off by a shutdown runs again at the next start and edits the message it
// showed instead of sending another (StreamTTL forgets it otherwise).
func (o *Outbox) finish(id string) bool {
	e, ok := o.pending[id]
	if !ok {
		return false
	}
	delete(o.pending, id)
	if e.msg.Kind == bus.KindStreamEnd && e.msg.Turn != "" && !e.msg.Interrupted {
		delete(o.streams, e.msg.Turn)
	}
	return true
}

// Durable reports whether m is recorded: complete messages and stream
// ends. Deltas, tool hints, progress and typing are best-effort.
func Durable(m bus.Outbound) bool {
	return m.Kind == bus.KindMessage || m.Kind == bus.KindStreamEnd
}

// Add records m durably and returns it with its ID set. A final reply to
// a turn that has one already returns ErrAnswered and is not recorded.
//
// The record is fsynced after the lock is released, so the records of
// sends the platform accepted (PartSent, StreamStarted) are not held up by
// it. If that fsync fails, m is returned recorded (it is written and
// pending; delivery goes on) with the error, which Err reports too.
func (o *Outbox) Add(m bus.Outbound) (bus.Outbound, error) {
	m, sync, err := o.add(m)
	if err != nil {
		return m, err
	}
	if err := sync(); err != nil {
		o.mu.Lock()
		o.w.SyncFailed(err)
		o.mu.Unlock()
		return m, fmt.Errorf("outbox: %w", err)
	}
	return m, nil
}

func (o *Outbox) add(m bus.Outbound) (bus.Outbound, func() error, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if m.Final && m.Turn != "" {
		if _, ok := o.answered[m.Turn]; ok {
			return m, nil, ErrAnswered
		}
	}
	o.seq++
	m.ID = strconv.FormatInt(o.seq, 10)
	now := time.Now()
	if err := o.write(record{Op: "add", ID: m.ID, At: now, Msg: &m}, false); err != nil {
		m.ID = ""
		return m, nil, err
	}
	o.pending[m.ID] = &entry{msg: m, at: now, sent: map[int]channels.MessageRef{}}
	o.order = append(o.order, m.ID)
	if m.Final && m.Turn != "" {
		o.markAnswered(m.Turn)
	}
	return m, o.w.Syncer(), nil
}

// Record is what the gateway does with everything the agent publishes: a
// durable message is added (and returned with its ID); the rest is passed
// on. It reports send false for what must not go out: a final reply to a
// turn answered already (the turn ran again after a crash), and the
// stream, typing and tool hints of that new run, which would show the
// answer again. err is a failed write; m should then still be sent.
func (o *Outbox) Record(m bus.Outbound) (out bus.Outbound, send bool, err error) {
	if !Durable(m) {
		return m, m.Turn == "" || !o.Answered(m.Turn), nil
	}
	rec, err := o.Add(m)
	switch {
	case errors.Is(err, ErrAnswered):
		return m, false, nil
	case err != nil && rec.ID == "":
		return m, true, err
	}
	if err != nil {
		return rec, true, err // written and pending, only its fsync failed
	}
	return rec, true, nil
}

// Answered reports whether turn has a final reply recorded: a turn run
// again after a crash then shows nothing (its stream, typing and tool
// hints would repeat what the user has seen).
func (o *Outbox) Answered(turn string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.answered[turn]
	return ok
}

// Queued returns when message id was recorded (zero if unknown).
func (o *Outbox) Queued(id string) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e, ok := o.pending[id]; ok {
		return e.at
	}
	return time.Time{}
}

// SentParts returns the parts of message id the platform accepted.
func (o *Outbox) SentParts(id string) map[int]channels.MessageRef {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.pending[id]
	if !ok || len(e.sent) == 0 {
		return nil
	}
	out := make(map[int]channels.MessageRef, len(e.sent))
	for i, r := range e.sent {
		out[i] = r
	}
	return out
}

// PartSent records that the platform accepted part i of message id as
// ref. The line is written, not fsynced: a kill -9 keeps it (the kernel
// has it), a power cut may lose it and repeat that send. An fsync here
// would widen the window in which a kill repeats a send (the platform
// accepted it; the record is not written yet) by the fsync and by every
// other chat's fsync waiting on the lock.
func (o *Outbox) PartSent(id string, part int, ref channels.MessageRef) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.pending[id]
	if !ok {
		return nil
	}
	// The platform has it whether or not the line is written: memory says
	// so, and a failed write makes the next one rewrite the file.
	e.sent[part] = ref
	return o.write(record{Op: "part", ID: id, Part: part, Ref: &ref}, false)
}

// Finished records that message id needs no more delivery. The line is
// not fsynced: lost, it replays a message whose parts are all marked sent,
// which sends nothing. A write failure is logged.
func (o *Outbox) Finished(id string, outcome relay.Outcome) {
	if err := o.finished(id, outcome); err != nil {
		o.log.Warn("outbox: recording a finished reply failed", "err", err)
	}
}

func (o *Outbox) finished(id string, outcome relay.Outcome) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.finish(id) {
		return nil
	}
	if o.opts.OnFinished != nil {
		o.opts.OnFinished(outcome)
	}
	if err := o.write(record{Op: "done", ID: id, Outcome: string(outcome)}, false); err != nil {
		return err
	}
	o.nFinished++
	if o.nFinished >= o.opts.CompactAfter {
		return o.compact()
	}
	return nil
}

// StreamStarted records that a stream of turn shows its text in the
// platform message ref (written, not fsynced, like PartSent). A write
// failure is logged (the next attempt of the turn then sends a new
// message).
func (o *Outbox) StreamStarted(turn string, ref channels.MessageRef) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	o.streams[turn] = stream{ref: ref, at: now}
	if err := o.write(record{Op: "stream", Turn: turn, At: now, Ref: &ref}, false); err != nil {
		o.log.Warn("outbox: recording a streamed message failed", "err", err)
	}
}

// StreamMessage returns the platform message of turn's unfinished stream,
// if one was shown (in this run or before a crash).
func (o *Outbox) StreamMessage(turn string) (channels.MessageRef, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s, ok := o.streams[turn]
	return s.ref, ok
}

// Pending returns how many messages are not finished.
func (o *Outbox) Pending() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.pending)
}

// Err returns the last write failure, nil once a write succeeded again.
func (o *Outbox) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.w.Err()
}

func (o *Outbox) write(r record, sync bool) error {
	if o.stale {
		if err := o.compact(); err != nil {
			return err
		}
	}
	if err := wal.AppendJSON(o.w, r, sync); err != nil {
		o.stale = true
		return fmt.Errorf("outbox: %w", err)
	}
	return nil
}

// compact rewrites the file with what is still needed.
// liveRecords is how many records compact would write.
func (o *Outbox) liveRecords() int {
	n := 1 + len(o.turns) + len(o.streams)
	for _, id := range o.order {
		if e, ok := o.pending[id]; ok {
			n += 1 + len(e.sent)
		}
	}
	return n
}

func (o *Outbox) compact() error {
	o.order = wal.Present(o.order, o.pending)
	recs := []record{{Op: "seq", ID: strconv.FormatInt(o.seq, 10)}}
	for _, t := range o.turns {
		recs = append(recs, record{Op: "answered", Turn: t})
	}
	for turn, s := range o.streams {
		if time.Since(s.at) > o.opts.StreamTTL {
			delete(o.streams, turn)
			continue
		}
		recs = append(recs, record{Op: "stream", Turn: turn, At: s.at, Ref: &s.ref})
	}
	for _, id := range o.order {
		e := o.pending[id]
		recs = append(recs, record{Op: "add", ID: id, At: e.at, Msg: &e.msg})
		for i, ref := range e.sent {
			recs = append(recs, record{Op: "part", ID: id, Part: i, Ref: &ref})
		}
	}
	if err := wal.RewriteJSON(o.w, recs); err != nil {
		return fmt.Errorf("outbox compact: %w", err)
	}
	o.nFinished = 0
	o.stale = false
	return nil
}

// Close closes the file.
func (o *Outbox) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.w.Close()
}
