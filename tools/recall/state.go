package recall

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
)

// stateVersion changes when the saved layout does; an index saved in
// another is rebuilt.
const stateVersion = 1

// magic starts a saved index.
var magic = []byte("nanobot-recall\n")

// state is the index's content. Docs and Sources are saved; the postings
// are derived from the texts when it is read.
type state struct {
	Version int
	// Sources are the files read so far, by key ("memory/MEMORY.md",
	// "sessions/<file>").
	Sources map[string]*source
	// Docs are the pieces, in the order they were added; a dead one
	// belongs to a file read again since and is skipped.
	Docs []piece
	// Model is the embedding model the vectors come from ("": none).
	Model string

	post     map[string][]posting
	live     int   // pieces not dead
	totalLen int64 // terms in the live pieces
	dead     int
}

// source is how far one file was read.
type source struct {
	// Offset is the bytes read (session files); Sum the checksum of the
	// bytes before it (session files) or of the whole file (memory files).
	Offset int64
	Sum    uint64
}

// piece is one searchable piece: a section of MEMORY.md, an entry of
// HISTORY.md or one message of a conversation.
type piece struct {
	Source string // the source key it was read from
	Label  string // where it comes from, as the results name it
	// Session and Archived name the conversation (empty for the memory
	// files), for who may see it.
	Session  string
	Archived bool
	Text     string
	Len      int
	Dead     bool
	// Vec is the embedding, scaled to int8 (nil: none yet); Scale maps it
	// back.
	Vec   []int8
	Scale float32
	// Norm is the length of Vec, for the vector ranking.
	Norm float32
}

// posting is one piece containing a term, and how often.
type posting struct {
	doc uint32
	tf  uint32
}

func newState() *state {
	return &state{Version: stateVersion, Sources: map[string]*source{}, post: map[string][]posting{}}
}

// add indexes a new piece and returns its number.
func (s *state) add(p piece) uint32 {
	ts := terms(p.Text)
	p.Len = len(ts)
	id := uint32(len(s.Docs))
	s.Docs = append(s.Docs, p)
	s.index(id, ts)
	return id
}

// index adds piece id's terms to the postings.
func (s *state) index(id uint32, ts []string) {
	counts := map[string]uint32{}
	for _, t := range ts {
		counts[t]++
	}
	for t, n := range counts {
		s.post[t] = append(s.post[t], posting{doc: id, tf: n})
	}
	s.live++
	s.totalLen += int64(len(ts))
}

// drop marks every piece read from source key dead, and forgets the
// source.
func (s *state) drop(key string) {
	for i := range s.Docs {
		d := &s.Docs[i]
		if d.Source == key && !d.Dead {
			d.Dead = true
			s.live--
			s.totalLen -= int64(d.Len)
			s.dead++
		}
	}
	delete(s.Sources, key)
}

// compact removes dead pieces once they are a quarter of all, renumbering
// the rest.
func (s *state) compact() bool {
	if s.dead == 0 || s.dead*4 < len(s.Docs) {
		return false
	}
	keep := s.Docs[:0]
	for _, d := range s.Docs {
		if !d.Dead {
			keep = append(keep, d)
		}
	}
	s.Docs = keep
	s.rebuild()
	return true
}

// rebuild derives the postings and counts from Docs. The pieces' source
// and session names are shared among them again (a decoded index holds a
// copy of each per piece).
func (s *state) rebuild() {
	s.post = map[string][]posting{}
	s.live, s.totalLen, s.dead = 0, 0, 0
	names := map[string]string{}
	intern := func(v *string) {
		if c, ok := names[*v]; ok {
			*v = c
		} else {
			names[*v] = *v
		}
	}
	for i := range s.Docs {
		intern(&s.Docs[i].Source)
		intern(&s.Docs[i].Session)
		if s.Docs[i].Dead {
			s.dead++
			continue
		}
		ts := terms(s.Docs[i].Text)
		s.Docs[i].Len = len(ts)
		s.index(uint32(i), ts)
	}
}

// encode is the saved form: magic, a CRC-32 of the rest, and the gob of
// the state.
func (s *state) encode() ([]byte, error) {
	var body bytes.Buffer
	if err := gob.NewEncoder(&body).Encode(s); err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(magic)+4+body.Len())
	out = append(out, magic...)
	out = binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(body.Bytes()))
	return append(out, body.Bytes()...), nil
}

// errDamaged is a saved index that is not one.
var errDamaged = errors.New("not a saved index, or damaged")

// readState reads a saved index.
func readState(path string) (*state, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(data, magic) || len(data) < len(magic)+4 {
		return nil, errDamaged
	}
	data = data[len(magic):]
	sum, body := binary.LittleEndian.Uint32(data), data[4:]
	if crc32.ChecksumIEEE(body) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", errDamaged)
	}
	var s state
	if err := gob.NewDecoder(bytes.NewReader(body)).Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %v", errDamaged, err)
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("saved by another version (%d, this one reads %d)", s.Version, stateVersion)
	}
	if s.Sources == nil {
		s.Sources = map[string]*source{}
	}
	s.rebuild()
	return &s, nil
}
