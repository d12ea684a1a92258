package recall

import (
	"context"
	"math"
)

// Embedder turns texts into vectors, one per text, for hybrid search.
// Implementations are safe for concurrent use; the agent's meters each
// call against the budgets and records it in the usage ledger.
type Embedder interface {
	// Model names the vectors: pieces embedded by another model are
	// embedded again.
	Model() string
	// Embed returns one vector per text, all of one length.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

const (
	// embedBatch is the texts sent in one embedding call.
	embedBatch = 64
	// embedPerRefresh bounds the pieces one background update embeds;
	// the next embeds the rest.
	embedPerRefresh = 1024
	// embedPerSearch bounds what a search embeds before it answers (one
	// batch: the turns saved since the last update); a larger backlog is
	// left to the background, so a search is never held up by it.
	embedPerSearch = embedBatch
	// embedRunes is how much of a piece is embedded.
	embedRunes = 2000
)

// embedLocked gives up to limit pieces without a vector one, in batches,
// calling the embedder with no lock held; more reports pieces left
// without one. A failure is logged (once for each message) and leaves
// the rest for a later update. x.update is held, so the piece numbers
// stay put.
func (x *Index) embedLocked(ctx context.Context, limit int) (more bool) {
	emb := x.opts.Embedder
	if emb == nil {
		return false
	}
	model := emb.Model()
	var todo []uint32
	var texts []string
	x.mu.Lock()
	if x.st.Model != model {
		for i := range x.st.Docs {
			x.st.Docs[i].Vec, x.st.Docs[i].Scale, x.st.Docs[i].Norm = nil, 0, 0
		}
		x.st.Model, x.dirty = model, true
	}
	for i, d := range x.st.Docs {
		if d.Dead || d.Vec != nil {
			continue
		}
		if len(todo) == limit {
			more = true
			break
		}
		todo = append(todo, uint32(i))
		texts = append(texts, clipRunes(d.Text, embedRunes))
	}
	x.mu.Unlock()
	for start := 0; start < len(todo); start += embedBatch {
		end := min(start+embedBatch, len(todo))
		vecs, err := emb.Embed(ctx, texts[start:end])
		if err == nil && len(vecs) != end-start {
			err = errWrongCount
		}
		if err != nil {
			x.embedFailed(err)
			return false // the next update tries again
		}
		x.mu.Lock()
		for i, v := range vecs {
			d := &x.st.Docs[todo[start+i]]
			d.Vec, d.Scale = quantize(v)
			d.Norm = vecNorm(d.Vec)
		}
		x.dirty = true
		x.embedErr = ""
		x.mu.Unlock()
	}
	return more
}

type embedError string

func (e embedError) Error() string { return string(e) }

const errWrongCount = embedError("the embedding service returned a different number of vectors than texts sent")

// embedFailed logs an embedding failure unless it is the one logged last.
func (x *Index) embedFailed(err error) {
	x.mu.Lock()
	repeat := x.embedErr == err.Error()
	x.embedErr = err.Error()
	x.mu.Unlock()
	if !repeat {
		x.log.Warn("memory index: embedding failed; searching by words until it works again", "err", err)
	}
}

// quantize scales v to int8 over its largest magnitude: a quarter of the
// memory of float32, and a cosine that barely moves.
func quantize(v []float32) ([]int8, float32) {
	var peak float32
	for _, f := range v {
		peak = max(peak, float32(math.Abs(float64(f))))
	}
	out := make([]int8, len(v))
	if peak == 0 {
		return out, 0
	}
	scale := peak / 127
	for i, f := range v {
		out[i] = int8(math.Round(float64(f / scale)))
	}
	return out, scale
}

// vecNorm is the length of a quantized vector.
func vecNorm(v []int8) float32 {
	var vv int64
	for _, x := range v {
		vv += int64(x) * int64(x)
	}
	return float32(math.Sqrt(float64(vv)))
}

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
