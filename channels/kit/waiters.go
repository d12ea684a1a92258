package kit

import "sync"

// Waiters matches the answers a connection's reader receives to the calls
// waiting for them, by request id (a JSON-RPC id, an echo, a req_id, a
// Socket.IO ack id). It is safe for concurrent use; the zero value is
// ready. Deliver never blocks, so the reader cannot be held up by a call
// that gave up or by an answer that comes twice.
type Waiters[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]chan V
}

// Wait registers a call waiting for id's answer and returns the channel the
// answer arrives on and forget, which the caller defers to unregister. ok is
// false, and nothing is registered, while another call waits for the same
// id.
func (w *Waiters[K, V]) Wait(id K) (answer <-chan V, forget func(), ok bool) {
	ch := make(chan V, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, busy := w.m[id]; busy {
		return nil, nil, false
	}
	if w.m == nil {
		w.m = map[K]chan V{}
	}
	w.m[id] = ch
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.m[id] == ch {
			delete(w.m, id)
		}
	}, true
}

// Deliver hands v to the call waiting for id, which then no longer waits,
// and reports whether there was one.
func (w *Waiters[K, V]) Deliver(id K, v V) bool {
	w.mu.Lock()
	ch, ok := w.m[id]
	delete(w.m, id)
	w.mu.Unlock()
	if ok {
		ch <- v
	}
	return ok
}
