// Package recalltest is the test suite's deterministic embedder: a vector
// made by hashing each word's character trigrams into a fixed number of
// dimensions, so texts that share word stems ("flight", "flights") are
// close and unrelated texts are not. It stands in for a real embedding
// model in tests and in the recall benchmark, in process (Embedder) or
// behind an OpenAI-compatible POST /embeddings (Handler); a real model
// also knows synonyms and paraphrases, which this one does not.
package recalltest

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"unicode"
)

// Dims is the length of the vectors.
const Dims = 256

// Vector embeds one text.
func Vector(text string) []float32 {
	v := make([]float32, Dims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		r := []rune("^" + w + "$")
		for i := 0; i+3 <= len(r); i++ {
			h := fnv.New32a()
			_, _ = h.Write([]byte(string(r[i : i+3])))
			s := h.Sum32()
			sign := float32(1)
			if s&1 == 1 {
				sign = -1
			}
			v[(s>>1)%Dims] += sign
		}
	}
	var n float64
	for _, f := range v {
		n += float64(f) * float64(f)
	}
	if n > 0 {
		for i := range v {
			v[i] /= float32(math.Sqrt(n))
		}
	}
	return v
}

// Embedder is a recall.Embedder over Vector that counts its calls and
// texts, and fails while Fail is set.
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

func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.Calls.Add(1)
	if e.Fail.Load() {
		return nil, errDown
	}
	e.Texts.Add(int64(len(texts)))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = Vector(t)
	}
	return out, ctx.Err()
}

type downError struct{}

func (downError) Error() string { return "the test embedder is down" }

var errDown = downError{}

// Handler serves POST /embeddings the way OpenAI's API does, with Vector,
// and counts the texts in usage.prompt_tokens (one per word).
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string `json:"model"`
			Input any    `json:"input"`
		}
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		var inputs []string
		switch in := req.Input.(type) {
		case string:
			inputs = []string{in}
		case []any:
			for _, s := range in {
				str, _ := s.(string)
				inputs = append(inputs, str)
			}
		}
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		resp := struct {
			Object string `json:"object"`
			Data   []item `json:"data"`
			Model  string `json:"model"`
			Usage  struct {
				PromptTokens int `json:"prompt_tokens"`
				TotalTokens  int `json:"total_tokens"`
			} `json:"usage"`
		}{Object: "list", Model: req.Model}
		for i, s := range inputs {
			resp.Data = append(resp.Data, item{Object: "embedding", Index: i, Embedding: Vector(s)})
			resp.Usage.PromptTokens += len(strings.Fields(s))
		}
		resp.Usage.TotalTokens = resp.Usage.PromptTokens
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	})
}
