package kit

import "sync"

// DefaultDedupSize is how many recent ids a Dedup remembers by default.
const DefaultDedupSize = 1000

// Dedup remembers the most recent message ids, so that a message a platform
// delivers twice (a redelivery after a reconnect, an event pushed on two
// connections) reaches the agent once. It is safe for concurrent use; the
// zero value remembers DefaultDedupSize ids.
type Dedup struct {
	mu   sync.Mutex
	size int
	ring []string
	next int
	set  map[string]struct{}
}

// NewDedup returns a cache of the last size ids (DefaultDedupSize when
// size ≤ 0).
func NewDedup(size int) *Dedup { return &Dedup{size: size} }

// Seen records id and reports whether it was already recorded. The empty
// id is never a duplicate (messages without ids cannot be deduplicated).
func (d *Dedup) Seen(id string) bool {
	if id == "" {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.set == nil {
		if d.size <= 0 {
			d.size = DefaultDedupSize
		}
		d.ring = make([]string, d.size)
		d.set = make(map[string]struct{}, d.size)
	}
	if _, ok := d.set[id]; ok {
		return true
	}
	if old := d.ring[d.next]; old != "" {
		delete(d.set, old)
	}
	d.ring[d.next] = id
	d.set[id] = struct{}{}
	d.next = (d.next + 1) % d.size
	return false
}

// Has reports whether id is recorded, without recording it.
func (d *Dedup) Has(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.set[id]
	return ok
}

// Forget removes id, so that a message whose delivery failed is taken
// again when the platform redelivers it.
func (d *Dedup) Forget(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.set[id]; !ok {
		return
	}
	delete(d.set, id)
	for i, v := range d.ring {
		if v == id {
			d.ring[i] = ""
		}
	}
}
