package recall

import (
	"context"
	"math"
	"sort"
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
	if err := x.Refresh(ctx); err != nil {
		return nil, 0, err
	}
	var qvec []float32
	if x.opts.Embedder != nil && x.hasVectors() {
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

func (x *Index) hasVectors() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.st == nil {
		return false
	}
	for i := len(x.st.Docs) - 1; i >= 0; i-- {
		if x.st.Docs[i].Vec != nil {
			return true
		}
	}
	return false
}

// scored is a piece and its score in one ranking.
type scored struct {
	doc   uint32
	score float64
}

// top returns the n best, best first (ties: the newer piece first).
func top(all []scored, n int) []uint32 {
	sort.Slice(all, func(i, j int) bool {
		if all[i].score != all[j].score {
			return all[i].score > all[j].score
		}
		return all[i].doc > all[j].doc
	})
	out := make([]uint32, 0, min(n, len(all)))
	for _, s := range all[:min(n, len(all))] {
		out = append(out, s.doc)
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
	acc := map[uint32]float64{}
	for w := range uniq {
		ps := s.post[w]
		df := 0
		for _, p := range ps {
			if !s.Docs[p.doc].Dead {
				df++
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
			acc[p.doc] += idf * tf * (k1 + 1) / (tf + k1*(1-b+b*float64(d.Len)/avg))
		}
	}
	all := make([]scored, 0, len(acc))
	for d, sc := range acc {
		all = append(all, scored{d, sc})
	}
	return top(all, n)
}

// rankMeaning is the cosine of the query's vector with each embedded live
// piece the scope sees.
func (s *state) rankMeaning(q []float32, scope Scope, n int) []uint32 {
	qn := norm(q)
	var all []scored
	for i := range s.Docs {
		d := &s.Docs[i]
		if d.Dead || d.Vec == nil || !scope.sees(d) {
			continue
		}
		if c := cosine(q, qn, d.Vec); c > 0 {
			all = append(all, scored{uint32(i), c})
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
