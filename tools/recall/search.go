package recall

import (
	"context"
	"math"
	"sort"
	"strings"
)

// Hit is one search result.
type Hit struct {
	// Label says where it comes from; Text is the whole piece.
	Label, Text string
	// Words and Meaning say which ranking found it: matching words (BM25),
	// similar meaning (the embeddings), or both.
	Words, Meaning bool
}

// Scope limits a search to what the asker may see: Session "" is
// everything (the owner), otherwise that conversation, current and
// archived, and the memory files.
type Scope struct{ Session string }

func (s Scope) sees(p *piece) bool {
	return s.Session == "" || p.Session == "" || p.Session == s.Session
}

// candidates is how many hits each ranking contributes to the fusion.
const candidates = 50

// rrfK is reciprocal rank fusion's constant (the value of the paper that
// introduced it).
const rrfK = 60

// Search brings the index up to date and returns up to limit hits for
// query, best first, and how many pieces were searched. With an Embedder
// the ranking fuses matching words and similar meaning; when the query
// cannot be embedded it falls back to words alone.
func (x *Index) Search(ctx context.Context, query string, limit int, scope Scope) ([]Hit, int, error) {
	// Bring the index up to date first, unless an update is running (in
	// the background, or for another search): then search what is
	// loaded rather than wait on its IO. Only a first load is waited for.
	locked := x.update.TryLock()
	if !locked && !x.ready() {
		x.update.Lock()
		locked = true
	}
	if locked {
		more, err := x.updateLocked(ctx, embedPerSearch)
		x.update.Unlock()
		if err != nil {
			return nil, 0, err
		}
		if more || x.unsaved() {
			x.Notify() // the backlog and the save, in the background
		}
	}
	var qvec []float32
	if x.opts.Embedder != nil && x.mostlyEmbedded() {
		vecs, err := x.opts.Embedder.Embed(ctx, []string{query})
		if err == nil && len(vecs) == 1 {
			qvec = vecs[0]
		} else if err != nil {
			x.embedFailed(err)
		}
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	st := x.st
	if st == nil { // unloaded since the refresh: rare, and the next call loads it
		return nil, 0, nil
	}
	words := st.rankWords(terms(query), scope, max(limit, candidates))
	var meaning []uint32
	if qvec != nil {
		meaning = st.rankMeaning(qvec, scope, max(limit, candidates))
	}
	return st.fuse(words, meaning, limit), st.live, nil
}

// mostlyEmbedded reports whether enough of the live pieces have a vector
// (embeddedShare) for the vector ranking to help: while a large backlog
// is embedded (a first start over a long history, a new model), a ranking
// that sees only part of the pieces would push the rest down, so searches
// rank by words until then.
func (x *Index) mostlyEmbedded() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.st == nil || x.st.live == 0 {
		return false
	}
	n := 0
	for i := range x.st.Docs {
		if d := &x.st.Docs[i]; !d.Dead && d.Vec != nil {
			n++
		}
	}
	return float64(n) >= embeddedShare*float64(x.st.live)
}

// embeddedShare is the share of pieces with a vector from which searches
// are hybrid.
const embeddedShare = 0.9

// scored is a piece and its score in one ranking.
type scored struct {
	doc   uint32
	score float64
}

// top returns the n best, best first (ties: the newer piece first).
func top(all []scored, n int) []uint32 {
	better := func(a, b scored) bool {
		if a.score != b.score {
			return a.score > b.score
		}
		return a.doc > b.doc
	}
	// Keep the n best in a min-heap: O(len·log n) rather than a sort of
	// everything scored (every embedded piece, for the vectors).
	h := make([]scored, 0, n)
	down := func(i int) {
		for {
			l, m := 2*i+1, i
			if l < len(h) && better(h[m], h[l]) {
				m = l
			}
			if r := l + 1; r < len(h) && better(h[m], h[r]) {
				m = r
			}
			if m == i {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for _, s := range all {
		switch {
		case len(h) < n:
			h = append(h, s)
			for i := len(h) - 1; i > 0; {
				p := (i - 1) / 2
				if !better(h[p], h[i]) {
					break
				}
				h[i], h[p] = h[p], h[i]
				i = p
			}
		case n > 0 && better(s, h[0]):
			h[0] = s
			down(0)
		}
	}
	sort.Slice(h, func(i, j int) bool { return better(h[i], h[j]) })
	out := make([]uint32, len(h))
	for i, s := range h {
		out[i] = s.doc
	}
	return out
}

// rankWords is BM25 over the live pieces the scope sees.
func (s *state) rankWords(q []string, scope Scope, n int) []uint32 {
	if len(q) == 0 || s.live == 0 {
		return nil
	}
	avg := float64(s.totalLen) / float64(s.live)
	uniq := map[string]bool{}
	for _, w := range q {
		uniq[w] = true
	}
	// A dense accumulator: one slot per piece beats a map once the
	// common words of a large index have long postings.
	acc := make([]float32, len(s.Docs))
	touched := make([]uint32, 0, 256)
	for w := range uniq {
		ps := s.post[w]
		df := len(ps)
		if s.dead > 0 {
			df = 0
			for _, p := range ps {
				if !s.Docs[p.doc].Dead {
					df++
				}
			}
		}
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (float64(s.live)-float64(df)+0.5)/(float64(df)+0.5))
		for _, p := range ps {
			d := &s.Docs[p.doc]
			if d.Dead || !scope.sees(d) {
				continue
			}
			tf := float64(p.tf)
			if acc[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			acc[p.doc] += float32(idf * tf * (k1 + 1) / (tf + k1*(1-b+b*float64(d.Len)/avg)))
		}
	}
	all := make([]scored, 0, len(touched))
	for _, d := range touched {
		sc := float64(acc[d])
		if isQuestion(s.Docs[d].Text) {
			sc *= questionWeight
		}
		all = append(all, scored{d, sc})
	}
	return top(all, n)
}

// questionWeight scales the score of a piece that is a question: asked
// before, it shares the words of the question asked now but rarely holds
// the answer, which a statement does.
const questionWeight = 0.5

// isQuestion reports a piece that ends in a question mark.
func isQuestion(text string) bool {
	t := strings.TrimSpace(text)
	return strings.HasSuffix(t, "?") || strings.HasSuffix(t, "？")
}

// rankMeaning is the cosine of the query's vector with each embedded live
// piece the scope sees.
func (s *state) rankMeaning(q []float32, scope Scope, n int) []uint32 {
	// The query is quantized like the pieces, so each comparison is an
	// integer dot product (the query's own length is the same for all).
	qv, _ := quantize(q)
	var all []scored
	for i := range s.Docs {
		d := &s.Docs[i]
		if d.Dead || len(d.Vec) != len(qv) || !scope.sees(d) || d.Norm == 0 {
			continue
		}
		var dot int32
		v := d.Vec[:len(qv)]
		for j, x := range qv {
			dot += int32(x) * int32(v[j])
		}
		if dot > 0 {
			all = append(all, scored{uint32(i), float64(dot) / float64(d.Norm)})
		}
	}
	return top(all, n)
}

// fuse merges the rankings by reciprocal rank fusion: a piece scores
// 1/(rrfK+rank) in each ranking it appears in.
func (s *state) fuse(words, meaning []uint32, limit int) []Hit {
	score := map[uint32]float64{}
	inWords := map[uint32]bool{}
	for r, d := range words {
		score[d] += 1 / float64(rrfK+r+1)
		inWords[d] = true
	}
	inMeaning := map[uint32]bool{}
	for r, d := range meaning {
		score[d] += 1 / float64(rrfK+r+1)
		inMeaning[d] = true
	}
	all := make([]scored, 0, len(score))
	for d, sc := range score {
		all = append(all, scored{d, sc})
	}
	var hits []Hit
	for _, d := range top(all, limit) {
		p := &s.Docs[d]
		hits = append(hits, Hit{Label: p.Label, Text: p.Text, Words: inWords[d], Meaning: inMeaning[d]})
	}
	return hits
}

// unsaved reports changes not saved yet.
func (x *Index) unsaved() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.dirty
}
