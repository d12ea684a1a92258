// Package recalltest is the test suite's deterministic embedder for
// memory_search: providertest.Vector (character trigrams hashed into 256
// dimensions) in process, so texts that share word stems are close and
// unrelated ones are not. It stands in for a real embedding model in tests
// and in the recall benchmark; a real model also knows synonyms and
// paraphrases, which this one does not.
//
// Concurrency: an Embedder is safe for concurrent use; its counters and
// Fail are atomics.
package recalltest

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/nanobot-go/nanobot/providers/providertest"
)

// Embedder is a recall.Embedder over providertest.Vector that counts its
// calls and texts, and fails while Fail is set.
type Embedder struct {
	Name         string // the model name ("test-trigram" when empty)
	Calls, Texts atomic.Int64
	Fail         atomic.Bool
}

func (e *Embedder) Model() string {
	if e.Name == "" {
		return "test-trigram"
	}
	return e.Name
}

// ErrDown is what Embed returns while Fail is set.
var ErrDown = errors.New("the test embedder is down")

func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.Calls.Add(1)
	if e.Fail.Load() {
		return nil, ErrDown
	}
	e.Texts.Add(int64(len(texts)))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = providertest.Vector(t)
	}
	return out, ctx.Err()
}
