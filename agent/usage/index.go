package usage

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"os"
	"slices"
)

// The index: a query that parsed a ledger file leaves a compact binary copy
// of what it read beside it (<file>.jsonl.idx), so the next query of that
// file decodes varints instead of parsing JSON. The JSON-lines file stays
// the record: the index is a cache that any query may rebuild, and it is
// trusted only as far as it checks out against the file.
//
// An index is a sequence of blocks, each the records of one span of whole
// lines [from, to) of its file:
//
//	u32 payload length | payload | u32 CRC-32 (IEEE) of the payload
//	payload: "NBI1" | from u64 | to u64 | CRC-32 of the file's last (up
//	to 64) bytes before to | skipped lines u64 | records u64 | offset of
//	the strings u64 | the records (each: zigzag time delta, 9 string
//	numbers, 6 zigzag counts, flags byte, cost f64 when flag 2) | the
//	strings (uvarint count, each uvarint length + bytes)
//
// A reader takes blocks in order while each starts where the last ended,
// ends within the file, has a good CRC and matches the file's bytes before
// its end; the first that does not ends the index (a block that starts
// before that point is a duplicate another query appended, and is skipped).
// Whatever the index does not cover is parsed from the file. New blocks are
// appended in one write; a torn or stale tail is cut off by the next
// writer. Editing a ledger file by hand without changing its length before
// an indexed point is the one change the checks may miss: delete the .idx
// files after such an edit.

const (
	indexHeader = 4 + 4 + 8 + 8 + 4 + 8 + 8 + 8 // length, then the payload's fixed part
	indexSuffix = ".idx"
	indexMagic  = "NBI1"
	// minBlockBytes is the least a chunk must hold to be indexed: the tail
	// of a month still being written is parsed again rather than indexed
	// in slivers.
	minBlockBytes = 256 << 10
	// tailCheck is how many bytes before a block's end its check covers.
	tailCheck = 64
)

var errBadIndex = errors.New("usage: bad index block")

// indexBlock is one checked block, ready to decode.
type indexBlock struct {
	from, to int64
	skipped  int64
	strs     [][]byte
	recs     []byte // the encoded records
	n        int
}

// loadIndex reads the index of path (size bytes long) and returns its good
// blocks in order, how far into the file they reach, and how many bytes
// of the index are good (to cut a bad tail before appending).
func loadIndex(f *os.File, path string, size int64) (blocks []indexBlock, covered, goodLen int64) {
	data, err := os.ReadFile(path + indexSuffix)
	if err != nil {
		return nil, 0, 0
	}
	var tail [tailCheck]byte
	off := 0
	for off+8 <= len(data) {
		n := int(binary.LittleEndian.Uint32(data[off:]))
		if n < indexHeader-4 || off+4+n+4 > len(data) {
			break
		}
		payload := data[off+4 : off+4+n]
		if crc32.ChecksumIEEE(payload) != binary.LittleEndian.Uint32(data[off+4+n:]) {
			break
		}
		b, check, err := decodeBlockHeader(payload)
		if err != nil || b.from > covered || b.to > size || b.to <= b.from {
			break
		}
		next := off + 4 + n + 4
		if b.from < covered {
			off, goodLen = next, int64(next) // a duplicate: skip it
			continue
		}
		lo := max(b.from, b.to-tailCheck)
		if _, err := f.ReadAt(tail[:b.to-lo], lo); err != nil || crc32.ChecksumIEEE(tail[:b.to-lo]) != check {
			break // the file is not what was indexed
		}
		blocks = append(blocks, b)
		covered, off, goodLen = b.to, next, int64(next)
	}
	return blocks, covered, goodLen
}

func decodeBlockHeader(p []byte) (indexBlock, uint32, error) {
	var b indexBlock
	if string(p[:4]) != indexMagic {
		return b, 0, errBadIndex
	}
	le := binary.LittleEndian
	b.from, b.to = int64(le.Uint64(p[4:])), int64(le.Uint64(p[12:]))
	check := le.Uint32(p[20:])
	b.skipped = int64(le.Uint64(p[24:]))
	n, strOff := le.Uint64(p[32:]), le.Uint64(p[40:])
	if strOff < indexHeader-4 || strOff > uint64(len(p)) || n > uint64(len(p)) {
		return b, 0, errBadIndex
	}
	d := decoder{b: p, i: int(strOff)}
	nstr := d.uvarint()
	if d.bad || nstr > uint64(len(p)) {
		return b, 0, errBadIndex
	}
	b.strs = make([][]byte, nstr)
	for i := range b.strs {
		l := d.uvarint()
		if d.bad || l > uint64(len(p)-d.i) {
			return b, 0, errBadIndex
		}
		b.strs[i] = p[d.i : d.i+int(l) : d.i+int(l)]
		d.i += int(l)
	}
	b.n, b.recs = int(n), p[indexHeader-4:strOff]
	return b, check, nil
}

// each calls fn with every record of the block; false when the block does
// not decode (the caller then parses its span of the file instead).
func (b *indexBlock) each(r *rawRecord, fn func(*rawRecord)) bool {
	d := decoder{b: b.recs}
	var ts int64
	for range b.n {
		ts += d.varint()
		r.ts = ts
		for j := range r.str {
			k := d.uvarint()
			if k >= uint64(len(b.strs)) {
				return false
			}
			r.str[j] = b.strs[k]
		}
		r.in, r.cr, r.cw, r.out, r.rsn, r.ms = d.varint(), d.varint(), d.varint(), d.varint(), d.varint(), d.varint()
		if d.i >= len(d.b) {
			return false
		}
		flags := d.b[d.i]
		d.i++
		r.est, r.hasCost, r.cost, r.escaped = flags&1 != 0, flags&2 != 0, 0, false
		if r.hasCost {
			if d.i+8 > len(d.b) {
				return false
			}
			r.cost = math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.i:]))
			d.i += 8
		}
		if d.bad {
			return false
		}
		fn(r)
	}
	return d.i == len(d.b)
}

type decoder struct {
	b   []byte
	i   int
	bad bool
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b[min(d.i, len(d.b)):])
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.i += n
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b[min(d.i, len(d.b)):])
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.i += n
	return v
}

// blockEncoder builds one block from the records of a chunk, in place:
// the records are appended after room for the header, the strings after
// them, and the header filled in last, so the block is never copied.
type blockEncoder struct {
	buf  []byte
	strs map[string]uint64
	list []string
	last [nStrFields]struct {
		s []byte
		k uint64
	} // the field's previous value
	lastTS  int64
	n       int
	skipped int64
}

// reset starts a block for a chunk of size bytes.
func (e *blockEncoder) reset(size int) {
	if e.strs == nil {
		e.strs = map[string]uint64{}
	}
	clear(e.strs)
	e.list, e.lastTS, e.n, e.skipped = e.list[:0], 0, 0, 0
	e.last = [nStrFields]struct {
		s []byte
		k uint64
	}{}
	e.buf = make([]byte, indexHeader, indexHeader+size/4) // lines shrink about sixfold
}

func (e *blockEncoder) add(r *rawRecord) {
	b := binary.AppendVarint(e.buf, r.ts-e.lastTS)
	e.lastTS = r.ts
	for j, s := range r.str {
		// Most fields repeat line after line (agent, provider, model,
		// outcome): compare before hashing.
		k := e.last[j].k
		if e.last[j].s == nil || string(e.last[j].s) != string(s) {
			var ok bool
			if k, ok = e.strs[string(s)]; !ok {
				k = uint64(len(e.list))
				e.strs[string(s)] = k
				e.list = append(e.list, string(s))
			}
			e.last[j].s, e.last[j].k = s, k
		}
		b = binary.AppendUvarint(b, k)
	}
	for _, v := range [...]int64{r.in, r.cr, r.cw, r.out, r.rsn, r.ms} {
		b = binary.AppendVarint(b, v)
	}
	var flags byte
	if r.est {
		flags |= 1
	}
	if r.hasCost {
		flags |= 2
	}
	b = append(b, flags)
	if r.hasCost {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.cost))
	}
	e.buf = b
	e.n++
}

// finish completes the framed block of chunk, the file's bytes [from,
// from+len(chunk)), and hands it over.
func (e *blockEncoder) finish(chunk []byte, from int64) []byte {
	b := e.buf
	strOff := len(b) - 4
	b = binary.AppendUvarint(b, uint64(len(e.list)))
	for _, s := range e.list {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	le := binary.LittleEndian
	le.PutUint32(b, uint32(len(b)-4))
	copy(b[4:], indexMagic)
	le.PutUint64(b[8:], uint64(from))
	le.PutUint64(b[16:], uint64(from+int64(len(chunk))))
	le.PutUint32(b[24:], crc32.ChecksumIEEE(chunk[max(0, len(chunk)-tailCheck):]))
	le.PutUint64(b[28:], uint64(e.skipped))
	le.PutUint64(b[36:], uint64(e.n))
	le.PutUint64(b[44:], uint64(strOff))
	b = le.AppendUint32(b, crc32.ChecksumIEEE(b[4:]))
	e.buf = nil
	return b
}

// newBlock is an encoded block waiting to be appended to its file's index.
type newBlock struct {
	from, to int64
	data     []byte
}

// appendIndex appends the blocks that continue the index of path from
// covered (in order; others are dropped), first cutting the index to
// goodLen. Errors are ignored: the index is only a cache.
func appendIndex(path string, covered, goodLen int64, blocks []newBlock) {
	slices.SortFunc(blocks, func(a, b newBlock) int { return int(a.from - b.from) })
	var out [][]byte
	for _, b := range blocks {
		if b.from != covered {
			continue
		}
		out = append(out, b.data)
		covered = b.to
	}
	if len(out) == 0 {
		return
	}
	f, err := os.OpenFile(path+indexSuffix, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || (st.Size() != goodLen && f.Truncate(goodLen) != nil) {
		return
	}
	// A block per write: a query appending at the same time interleaves
	// whole blocks, and readers skip the duplicates.
	for _, b := range out {
		if _, err := f.Write(b); err != nil {
			return
		}
	}
}
