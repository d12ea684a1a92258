package bus

import "sync/atomic"

// queue is one bounded FIFO that takes memory only for what it holds: a
// channel buffer of max slots would be allocated (and scanned by the GC)
// from the first second — 1.2 MB for the default inbound and outbound
// queues, most of the gateway's anonymous memory at start (issue 28).
// Publishers hand messages over intake to the pump goroutine, which keeps
// them in a slice grown on demand and offers the oldest on recv; while it
// holds max messages it stops taking, so publishers block exactly as on a
// full buffered channel. Both channels are unbuffered. The pump ends, and
// closes recv, once intake is closed and everything held was received.
type queue[T any] struct {
	intake chan T
	recv   chan T
	max    int
	held   atomic.Int64
}

func newQueue[T any](max int) *queue[T] {
	q := &queue[T]{intake: make(chan T), recv: make(chan T), max: max}
	go q.pump()
	return q
}

// keepCap is the largest buffer kept once the queue is empty again; a
// burst's larger one is left to the GC.
const keepCap = 64

func (q *queue[T]) pump() {
	defer close(q.recv)
	var buf []T // buf[head:] is held, oldest first
	head := 0
	intake := q.intake
	for intake != nil || head < len(buf) {
		in, out := intake, q.recv
		if len(buf)-head >= q.max {
			in = nil // full: publishers wait
		}
		var first T
		if head < len(buf) {
			first = buf[head]
		} else {
			out = nil
		}
		select {
		case m, ok := <-in:
			if !ok {
				intake = nil
				continue
			}
			if len(buf) == cap(buf) && head > 0 { // reuse the space already received
				buf = buf[:copy(buf, buf[head:])]
				clear(buf[len(buf):cap(buf)])
				head = 0
			}
			buf = append(buf, m)
			q.held.Add(1)
		case out <- first:
			var zero T
			buf[head] = zero // let the GC have what the message points to
			head++
			q.held.Add(-1)
			if head == len(buf) {
				head, buf = 0, buf[:0]
				if cap(buf) > keepCap {
					buf = nil
				}
			}
		}
	}
}
