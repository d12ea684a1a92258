package providertest

import (
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"strings"
	"unicode"
)

// Embeddings is the format of a POST {URL}/v1/embeddings request. The
// server answers it itself, never from the script: each input gets
// Vector(input), and usage counts one token per word.
const Embeddings Format = "embeddings"

// EmbeddingDims is the length of Vector's vectors.
const EmbeddingDims = 256

// Vector is the server's deterministic embedding: each word's character
// trigrams hashed into EmbeddingDims signed buckets, normalised. Texts
// that share word stems ("flight", "flights") come out close; a real
// model also knows synonyms and paraphrases, which this one does not.
func Vector(text string) []float32 {
	v := make([]float32, EmbeddingDims)
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
			v[(s>>1)%EmbeddingDims] += sign
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

// serveEmbeddings answers an embeddings request the way OpenAI's API does.
func (s *Server) serveEmbeddings(w http.ResponseWriter, req Request) {
	var inputs []string
	switch in := req.Body["input"].(type) {
	case string:
		inputs = []string{in}
	case []any:
		for _, x := range in {
			str, _ := x.(string)
			inputs = append(inputs, str)
		}
	default:
		http.Error(w, `{"error":{"message":"input must be a string or a list of strings"}}`, http.StatusBadRequest)
		return
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	type usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	}
	resp := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
		Usage  usage  `json:"usage"`
	}{Object: "list", Data: []item{}, Model: req.Model}
	for i, in := range inputs {
		resp.Data = append(resp.Data, item{Object: "embedding", Index: i, Embedding: Vector(in)})
		resp.Usage.PromptTokens += len(strings.Fields(in))
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// record keeps req among the recorded requests.
func (s *Server) record(req Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.forget {
		s.requests = append(s.requests, req)
	}
}
