package journal

import (
	"hash/fnv"
	"strconv"
	"strings"
)

// dedupSet remembers the most recent n message keys as 64-bit FNV-1a
// hashes in a ring: 10,000 keys take about 200 KB whatever the keys' length
// (as strings they took 1.5 MB, which showed as memory growth between
// 1,000 and 10,000 sessions). A collision between two of the remembered
// keys (p ≈ n²/2⁶⁵, about 3·10⁻¹² for 10,000) would drop one message as a
// duplicate.
type dedupSet struct {
	ring []uint64 // oldest at next once full
	next int
	full bool
	set  map[uint64]struct{}
}

func newDedupSet(n int) *dedupSet {
	// The set grows with the keys: presized, its 10,000 empty slots took
	// 0.3 MB of resident memory from the first second.
	return &dedupSet{ring: make([]uint64, n), set: make(map[uint64]struct{})}
}

func hashKey(key string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return h.Sum64()
}

// storedPrefix marks a hash written to the file by compaction; real keys
// always contain NUL separators, so they never look like one.
const storedPrefix = "#"

// parseStored reads a key from a "seen" line: a stored hash, or a key
// written by an older version.
func parseStored(s string) uint64 {
	if rest, ok := strings.CutPrefix(s, storedPrefix); ok && len(rest) == 16 {
		if h, err := strconv.ParseUint(rest, 16, 64); err == nil {
			return h
		}
	}
	return hashKey(s)
}

func formatStored(h uint64) string {
	s := strconv.FormatUint(h, 16)
	return storedPrefix + strings.Repeat("0", 16-len(s)) + s
}

func (d *dedupSet) has(h uint64) bool {
	_, ok := d.set[h]
	return ok
}

func (d *dedupSet) add(h uint64) {
	if d.has(h) {
		return
	}
	if d.full {
		delete(d.set, d.ring[d.next])
	}
	d.ring[d.next] = h
	d.set[h] = struct{}{}
	d.next++
	if d.next == len(d.ring) {
		d.next, d.full = 0, true
	}
}

// each calls f for every remembered hash, oldest first.
func (d *dedupSet) each(f func(uint64)) {
	if d.full {
		for _, h := range d.ring[d.next:] {
			f(h)
		}
	}
	for _, h := range d.ring[:d.next] {
		f(h)
	}
}
