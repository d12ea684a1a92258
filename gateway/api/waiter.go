package api

import (
	"context"
	"net/http"
	"strings"
	"sync"

	"github.com/nanobot-go/nanobot/bus"
)

// waiter collects one request's answer from the dispatcher's calls.
type waiter struct {
	wake    chan struct{} // one pending signal
	release func()        // gives back the request's turn slot

	mu      sync.Mutex
	streams []string          // stream ids in the order they began
	text    map[string]string // stream id -> its text so far
	done    bool
	failed  bool // the final message reports a failure
	usage   *bus.Usage
}

// finalID keys a final message that was not streamed (an error, a command's
// answer).
const finalID = "\x00final"

func (w *waiter) update(m bus.Outbound) {
	if m.StreamID == "" && !m.Final {
		return // a tool hint, progress note or message-tool note: not the answer
	}
	id := m.StreamID
	if id == "" {
		id = finalID
	}
	w.mu.Lock()
	if _, ok := w.text[id]; !ok {
		w.streams = append(w.streams, id)
	}
	w.text[id] = strings.TrimLeft(m.Content, "\n") // as the dispatcher shows it
	if m.Final {
		w.done, w.failed = true, m.IsError
		if m.Usage != nil {
			u := *m.Usage
			w.usage = &u
		}
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// answer is a request's answer so far: the text (each message of the
// turn, in order, separated by a blank line), whether the turn is over and
// failed, and its usage once over.
type answer struct {
	text         string
	done, failed bool
	usage        *bus.Usage
}

func (w *waiter) answer() answer {
	w.mu.Lock()
	defer w.mu.Unlock()
	var parts []string
	for _, id := range w.streams {
		if t := w.text[id]; strings.TrimSpace(t) != "" {
			parts = append(parts, t)
		}
	}
	return answer{text: strings.Join(parts, "\n\n"), done: w.done, failed: w.failed, usage: w.usage}
}

// next waits for the answer to change; false if ctx ended first.
func (w *waiter) next(ctx context.Context) (answer, bool) {
	select {
	case <-ctx.Done():
		return answer{}, false
	case <-w.wake:
	}
	return w.answer(), true
}

// final waits for the turn to be over; false if ctx ended first.
func (w *waiter) final(ctx context.Context) (answer, bool) {
	for {
		if a, ok := w.next(ctx); !ok || a.done {
			return a, ok
		}
	}
}

// follow passes each growth of the answer's text to grow (a failed
// turn's text only withFailure) until the turn is over, and returns the
// final answer and the text grow was given. The text only grows; if a
// message was rewritten (its final text differs from what streamed), what
// was sent stands. ok is false if ctx ended or grow failed first.
func (w *waiter) follow(ctx context.Context, withFailure bool, grow func(delta string) error) (a answer, sent string, ok bool) {
	for {
		if a, ok = w.next(ctx); !ok {
			return a, sent, false
		}
		if strings.HasPrefix(a.text, sent) && len(a.text) > len(sent) && (withFailure || !a.failed) {
			if grow(a.text[len(sent):]) != nil {
				return a, sent, false
			}
			sent = a.text
		}
		if a.done {
			return a, sent, true
		}
	}
}

// startEvents begins a server-sent event stream.
func startEvents(w http.ResponseWriter) *http.ResponseController {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return http.NewResponseController(w)
}

// whole waits for the answer and writes body(answer) as one JSON object
// (a failed turn is 502 with the agent's error text); false if the client
// went away first.
func whole(w http.ResponseWriter, r *http.Request, wt *waiter, body func(answer) any) bool {
	a, ok := wt.final(r.Context())
	if !ok {
		return false
	}
	if a.failed {
		writeError(w, http.StatusBadGateway, "server_error", "upstream_error", a.text)
		return true
	}
	writeJSON(w, http.StatusOK, body(a))
	return true
}
