// Streaming a reply into platform messages: the first message shown after
// a short delay, edits throttled to the channel's interval, a new message
// when the text outgrows the limit, and the end of the stream. The chat
// worker that calls this is in dispatch.go.

package relay

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// stream is a reply being streamed into platform messages. total is all
// text received; the part before done went into earlier messages (a reply
// longer than the channel's limit continues in a new message); reopen is a
// code fence the current message starts with because the cut fell inside a
// code block.
type stream struct {
	total    string
	done     int
	reopen   string
	ref      channels.MessageRef
	shown    string // what the current platform message shows
	lastEdit time.Time
	started  time.Time // first delta
	// lastDelta is when the latest delta came (quiet streams expire).
	lastDelta time.Time
	base      bus.Outbound
	failed    bool // a send or edit failed: the rest goes out as plain messages
	// draft is set while the stream is shown as the platform's draft
	// (channels.Drafter) rather than as a message: shown is then what the
	// draft shows, lastEdit when it was last drawn, and ref stays empty.
	draft bool
}

func (s *stream) current() string { return s.reopen + strings.TrimLeft(s.total[s.done:], "\n") }

// visible reports whether the user was shown any of the stream: a message
// (sent or from an earlier attempt), a finished piece, or a draft.
func (s *stream) visible() bool {
	return s.ref.MessageID != "" || s.done > 0 || (s.draft && s.shown != "")
}

// nextPiece cuts the current text, which is over limit, at a good point:
// piece is the part that goes out now (a code block open at the cut is
// closed in it and reopened by reopen), advance how far it takes s.done.
func (s *stream) nextPiece(limit int) (piece string, advance int, reopen string) {
	raw := strings.TrimLeft(s.total[s.done:], "\n")
	skipped := len(s.total[s.done:]) - len(raw)
	budget := limit - utf8.RuneCountInString(s.reopen) - 4
	cut := cutPoint(raw, max(budget, 1))
	piece = s.reopen + raw[:cut]
	if fence, open := openFence(piece); open {
		piece = strings.TrimRight(piece, "\n") + "\n```"
		reopen = fence + "\n"
	}
	return strings.TrimRight(piece, " \n"), skipped + cut, reopen
}

// unfinishedStream is the platform message a stream of turn showed without
// being finished (an attempt before a restart), on channels that can edit
// it; the zero ref if none.
func (w *chatWorker) unfinishedStream(turn string) channels.MessageRef {
	if _, ok := w.editor(); !ok || w.d.cfg.Delivery == nil || turn == "" {
		return channels.MessageRef{}
	}
	ref, _ := w.d.cfg.Delivery.StreamMessage(turn)
	return ref
}

// finish tells a Finisher that the stream's current message is complete.
func (w *chatWorker) finish(ctx context.Context, s *stream) {
	if f, ok := w.ch.(channels.Finisher); ok && !s.failed && s.ref.MessageID != "" {
		if err := f.Finish(ctx, s.ref); err != nil {
			w.d.log.Warn("finishing a streamed message failed", "channel", w.ch.Name(), "err", err)
		}
	}
}

// pushStream shows the stream's current text: the first time as a new
// message, afterwards as an edit no faster than the channel's edit interval
// (a timer flushes what had to wait). With final set it waits out the
// interval and makes the last edit. Text beyond the channel's limit is cut
// at a good point and continues in a new message.
func (w *chatWorker) pushStream(ctx context.Context, s *stream, final bool) {
	ed, _ := w.editor()
	limit := w.limit()
	for !s.failed {
		cur := s.current()
		if strings.TrimSpace(cur) == "" {
			return
		}
		if utf8.RuneCountInString(cur) > limit {
			piece, advance, reopen := s.nextPiece(limit)
			w.show(ctx, s, ed, piece, true)
			if s.failed {
				return
			}
			w.finish(ctx, s) // the piece is complete; the rest goes on in a new message
			s.done += advance
			s.reopen, s.ref, s.shown = reopen, channels.MessageRef{}, ""
			continue
		}
		if s.ref.MessageID == "" && s.done == 0 && !final {
			// Hold the first message briefly: a short reply that ends
			// meanwhile goes out once, instead of as a message plus an
			// edit that must wait out the edit interval.
			if wait := firstShowDelay(ed) - time.Since(s.started); wait > 0 {
				w.schedule(wait)
				return
			}
		}
		if s.ref.MessageID != "" && !final && time.Since(s.lastEdit) < ed.EditInterval() {
			w.schedule(ed.EditInterval() - time.Since(s.lastEdit))
			return
		}
		w.show(ctx, s, ed, cur, final)
		return
	}
}

// MaxFirstShowDelay caps how long a stream's first message is held back.
const MaxFirstShowDelay = 500 * time.Millisecond

// firstShowDelay is how long a stream's first message waits for more text:
// half the edit interval, at most MaxFirstShowDelay.
func firstShowDelay(ed channels.Editor) time.Duration {
	return min(ed.EditInterval()/2, MaxFirstShowDelay)
}

// show puts text on the stream's current message: a send if there is none,
// an edit (after the edit interval when wait is set) if the text changed.
func (w *chatWorker) show(ctx context.Context, s *stream, ed channels.Editor, text string, wait bool) {
	if s.ref.MessageID == "" {
		m := s.base
		m.Kind, m.Content = bus.KindMessage, text
		ref, err := w.send(ctx, m)
		if err != nil {
			s.failed = true // send already retried; the final text is sent again
			return
		}
		s.ref, s.shown, s.lastEdit = ref, text, time.Now()
		if dl := w.d.cfg.Delivery; dl != nil && s.done == 0 && m.Turn != "" && !m.Final {
			// A restart before this stream ends lets the next attempt of
			// the turn finish this message instead of sending another.
			dl.StreamStarted(m.Turn, ref)
		}
		return
	}
	if text == s.shown {
		return
	}
	if wait {
		if d := ed.EditInterval() - time.Since(s.lastEdit); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
	}
	m := s.base
	m.Content = text
	kind := m.Kind
	m.Kind = bus.KindDelta
	_, err := w.retry(ctx, m, func() (channels.MessageRef, error) { return channels.MessageRef{}, ed.Edit(ctx, s.ref, m) })
	m.Kind = kind
	s.lastEdit = time.Now()
	if err != nil {
		w.d.log.Warn("edit failed; the message is sent again whole when the stream ends", "channel", w.ch.Name(), "err", err)
		// The platform keeps showing s.shown. The stream's end sends this
		// message's text again from its start, not from where the stuck
		// message stops: a continuation would begin mid-sentence, often
		// mid-word.
		s.failed = true
		return
	}
	s.shown = text
}

// schedule makes the worker flush its streams after the given time, or
// sooner if an earlier flush is due already.
func (w *chatWorker) schedule(after time.Duration) {
	at := time.Now().Add(after)
	if w.timer != nil {
		if !at.Before(w.timerAt) {
			return
		}
		w.timer.Stop()
	}
	w.timer, w.timerAt = time.NewTimer(after), at
}

// flushDue pushes every stream whose edit or draft had to wait.
func (w *chatWorker) flushDue(ctx context.Context) {
	for _, s := range w.streams {
		w.push(ctx, s, false)
	}
}

// flushAll makes the pending edits of all streams and finishes their
// messages, and sends what drafted streams drew (on shutdown: their ends
// are not coming).
func (w *chatWorker) flushAll(ctx context.Context) {
	for id, s := range w.streams {
		w.forgetStream(id)
		if s.draft {
			_ = w.endDraft(ctx, s, s.cutOff())
			continue
		}
		w.pushStream(ctx, s, true)
		w.finish(ctx, s)
	}
}

// cutOff is the end of a stream whose own end is not coming: its text so
// far, marked Interrupted.
func (s *stream) cutOff() bus.Outbound {
	end := s.base
	end.Kind, end.Content, end.Interrupted, end.Final = bus.KindStreamEnd, s.total, true, false
	s.base = end
	return end
}

// openStream and forgetStream keep the dispatcher's count of open streams.
func (w *chatWorker) openStream(id string, s *stream) {
	w.streams[id] = s
	w.d.streams.Add(1)
}

func (w *chatWorker) forgetStream(id string) {
	if _, ok := w.streams[id]; ok {
		delete(w.streams, id)
		w.d.streams.Add(-1)
	}
}
