// Streaming a reply as a platform draft (channels.Drafter): the draft is
// redrawn as the text grows and before it would expire, and the stream
// ends as ordinary messages, since a draft vanishes by itself.

package relay

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// drafter returns the channel as a Drafter when it is one and edits are
// on (a stream that cannot be drafted is edited instead).
func (w *chatWorker) drafter() (channels.Drafter, bool) {
	if _, ok := w.editor(); !ok {
		return nil, false
	}
	dr, ok := w.ch.(channels.Drafter)
	return dr, ok
}

// push shows what a stream has now, as a draft or as a message.
func (w *chatWorker) push(ctx context.Context, s *stream, final bool) {
	if s.draft {
		w.pushDraft(ctx, s)
		return
	}
	w.pushStream(ctx, s, final)
}

// pushDraft redraws a drafted stream's draft: after a short hold for the
// first one (a reply that ends meanwhile is sent once, without a draft),
// then no faster than the edit interval, and with unchanged text once
// DraftRefresh passed. Text beyond the limit is sent as a message at a
// good cut and the draft goes on with the rest. The stream's end is
// endDraft's, so a final push has nothing to draw.
func (w *chatWorker) pushDraft(ctx context.Context, s *stream) {
	dr, _ := w.drafter()
	limit := w.limit()
	for s.draft && !s.failed {
		cur := s.current()
		if strings.TrimSpace(cur) == "" {
			return
		}
		if utf8.RuneCountInString(cur) > limit {
			piece, advance, reopen := s.nextPiece(limit)
			if _, err := w.send(ctx, wholeMessage(s.base, piece)); err != nil {
				s.failed = true // the stream's end sends it again
				return
			}
			s.done += advance
			s.reopen, s.shown = reopen, ""
			continue
		}
		since := time.Since(s.lastEdit)
		switch {
		case s.shown == "" && s.done == 0:
			if wait := firstShowDelay(dr) - time.Since(s.started); wait > 0 {
				w.schedule(wait)
				return
			}
		case cur == s.shown:
			if since < dr.DraftRefresh() {
				w.schedule(dr.DraftRefresh() - since)
				return
			}
		case since < dr.EditInterval():
			w.schedule(dr.EditInterval() - since)
			return
		}
		w.drawDraft(ctx, s, dr, cur)
		return
	}
}

// drawDraft shows text as the stream's draft. A draft that fails is not
// retried: the stream goes on as a message the dispatcher edits.
func (w *chatWorker) drawDraft(ctx context.Context, s *stream, dr channels.Drafter, text string) {
	m := s.base
	m.Kind, m.Content = bus.KindDelta, text
	err := dr.Draft(ctx, m)
	w.observe(bus.KindDelta, 1, err)
	s.lastEdit = time.Now()
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		w.d.log.Info("draft failed; the stream goes on as a message", "channel", w.ch.Name(), "chat_id", m.ChatID, "err", err)
		s.draft = false
		w.pushStream(ctx, s, false)
		return
	}
	s.shown = text
	w.schedule(dr.DraftRefresh())
}

// endDraft ends a drafted stream with m (its end, or for a stream cut off
// by shutdown or silence, its text so far marked Interrupted): the text not
// sent yet goes out as messages. Unlike an edited stream, a cut-off one is
// sent too: its draft is about to vanish, and what the user saw must stay.
// A stream nothing of which was drawn yet is sent like one never shown.
func (w *chatWorker) endDraft(ctx context.Context, s *stream, m bus.Outbound) error {
	if !s.visible() {
		_, sendProgress := w.d.cfg.progressFor(w.ch.Name())
		if !m.Interrupted && (m.Final || sendProgress) {
			return w.sendText(ctx, wholeMessage(m, ""), m.Content)
		}
		return errSkipped
	}
	text := s.current()
	if m.Interrupted && s.done == 0 && utf8.RuneCountInString(text) <= w.limit() {
		// As for an edited stream: a turn cut off by a shutdown runs
		// again after the restart and goes on in this message (recorded
		// as the stream's), rather than sending another. So it keeps its
		// StreamID: it may be edited.
		cut := m
		cut.Kind, cut.Content = bus.KindMessage, text
		ref, err := w.send(ctx, cut)
		if err != nil {
			return err
		}
		if dl := w.d.cfg.Delivery; dl != nil && m.Turn != "" {
			dl.StreamStarted(m.Turn, ref)
		}
		return nil
	}
	return w.sendText(ctx, wholeMessage(m, ""), text)
}

// wholeMessage is m as a message that is never edited: no StreamID, which
// tells the channel (and content, when given, as its text).
func wholeMessage(m bus.Outbound, content string) bus.Outbound {
	m.Kind, m.StreamID = bus.KindMessage, ""
	if content != "" {
		m.Content = content
	}
	return m
}
