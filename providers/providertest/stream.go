package providertest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// event is one server-sent event; name is empty for OpenAI's data-only
// stream.
type event struct {
	name string
	data string
}

func dataEvent(v any) event {
	b, _ := json.Marshal(v)
	return event{data: string(b)}
}

func namedEvent(name string, v any) event {
	b, _ := json.Marshal(v)
	return event{name: name, data: string(b)}
}

// writeStream sends events one by one, flushing each, and applies the
// reply's stream faults.
func (s *Server) writeStream(w http.ResponseWriter, r *http.Request, reply Reply, events []event) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flush(w)
	if !s.pause(r, reply.FirstByteDelay) {
		return
	}
	for i, ev := range events {
		if reply.StallAfter > 0 && i == reply.StallAfter {
			// Hold the connection open with nothing more to say.
			select {
			case <-r.Context().Done():
			case <-s.done:
			}
			return
		}
		if reply.DropAfter > 0 && i == reply.DropAfter {
			s.drop(w)
			return
		}
		if i > 0 && !s.pause(r, reply.EventDelay) {
			return
		}
		if ev.name != "" {
			if _, err := fmt.Fprintf(w, "event: %s\n", ev.name); err != nil {
				return
			}
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", ev.data); err != nil {
			return
		}
		flush(w)
	}
}

// drop cuts the connection in the middle of the chunked body, as a proxy
// or a crashing server would.
func (s *Server) drop(w http.ResponseWriter) {
	flush(w)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.t.Errorf("providertest: hijack for DropAfter: %v", err)
		return
	}
	_ = conn.Close()
}
