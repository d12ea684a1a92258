package ollamatest

import (
	"fmt"
	"io"
)

// Step is one thing the model does: when the prompt ends with the token
// After, it answers Say and stops. After and Say are tokens of their own
// (user-defined, so the tokenizer finds After whole in a prompt and the
// detokenizer gives Say back byte for byte); Say may hold no spaces or line
// breaks, which a byte-level vocabulary would spell differently.
type Step struct {
	After, Say string
}

// Sizes of the model: one transformer block whose attention and
// feed-forward outputs are zero, so each position's state is its token's
// embedding and the next token depends on the last one alone.
const (
	embd  = 64 // room for 64 tokens with a meaning of their own
	heads = 4
	ffn   = 64
	ctx   = 8192
	// sure is the logit a step's next token gets over every other (the
	// others get 0): sampling at any usual temperature picks it.
	sure = 40
)

// byteTokens is GPT-2's byte-level alphabet: printable bytes stand for
// themselves, the others for code points from U+0100 on, in byte order.
func byteTokens() []string {
	out := make([]string, 256)
	next := rune(256)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			out[b] = string(rune(b))
		} else {
			out[b] = string(next)
			next++
		}
	}
	return out
}

// Token types of llama.cpp's vocabulary.
const (
	typeNormal      int32 = 1
	typeControl     int32 = 3
	typeUserDefined int32 = 4
)

// WriteModel writes a GGUF file of the llama architecture whose greedy
// (and any sensibly sampled) answer follows steps exactly: every byte has
// a token, so any prompt tokenizes, and a prompt ending in no step's After
// token gets an arbitrary answer. It is a fixture for testing servers and
// clients, not a language model.
func WriteModel(w io.Writer, steps []Step) error {
	tokens := byteTokens()
	types := make([]int32, len(tokens), len(tokens)+3+2*len(steps))
	for i := range types {
		types[i] = typeNormal
	}
	add := func(s string, typ int32) int {
		tokens, types = append(tokens, s), append(types, typ)
		return len(tokens) - 1
	}
	bos, eos := add("<s>", typeControl), add("</s>", typeControl)
	add("ĠĠ", typeNormal) // the one merge, for tokenizers that want some
	// Each After and Say token gets a dimension of the embedding.
	dim := map[int]int{}
	next := map[int]int{}
	ids := map[string]int{}
	token := func(s string) (int, error) {
		if id, ok := ids[s]; ok {
			return id, nil
		}
		if len(dim) == embd {
			return 0, fmt.Errorf("ollamatest: more than %d distinct step tokens", embd)
		}
		id := add(s, typeUserDefined)
		ids[s], dim[id] = id, len(dim)
		return id, nil
	}
	for _, s := range steps {
		a, err := token(s.After)
		if err != nil {
			return err
		}
		b, err := token(s.Say)
		if err != nil {
			return err
		}
		if _, dup := next[a]; dup {
			return fmt.Errorf("ollamatest: two steps after %q", s.After)
		}
		next[a] = b
		if _, set := next[b]; !set {
			next[b] = eos
		}
	}
	vocab := len(tokens)
	embed := make([]float32, vocab*embd)
	output := make([]float32, vocab*embd)
	for id, d := range dim {
		embed[id*embd+d] = 1
		output[next[id]*embd+d] = sure
	}
	ones := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = 1
		}
		return v
	}
	zeros := func(n int) []float32 { return make([]float32, n) }
	tensors := []tensor{
		{"token_embd.weight", []uint64{embd, uint64(vocab)}, embed},
		{"output_norm.weight", []uint64{embd}, ones(embd)},
		{"output.weight", []uint64{embd, uint64(vocab)}, output},
		{"blk.0.attn_norm.weight", []uint64{embd}, ones(embd)},
		{"blk.0.attn_q.weight", []uint64{embd, embd}, zeros(embd * embd)},
		{"blk.0.attn_k.weight", []uint64{embd, embd}, zeros(embd * embd)},
		{"blk.0.attn_v.weight", []uint64{embd, embd}, zeros(embd * embd)},
		{"blk.0.attn_output.weight", []uint64{embd, embd}, zeros(embd * embd)},
		{"blk.0.ffn_norm.weight", []uint64{embd}, ones(embd)},
		{"blk.0.ffn_gate.weight", []uint64{embd, ffn}, zeros(embd * ffn)},
		{"blk.0.ffn_up.weight", []uint64{embd, ffn}, zeros(embd * ffn)},
		{"blk.0.ffn_down.weight", []uint64{ffn, embd}, zeros(ffn * embd)},
	}
	scores := make([]float32, vocab)
	meta := []kv{
		{"general.architecture", "llama"},
		{"general.name", "nanobot-steps"},
		{"general.alignment", uint32(ggufAlign)},
		{"general.file_type", uint32(0)}, // all F32
		{"llama.context_length", uint32(ctx)},
		{"llama.embedding_length", uint32(embd)},
		{"llama.block_count", uint32(1)},
		{"llama.feed_forward_length", uint32(ffn)},
		{"llama.attention.head_count", uint32(heads)},
		{"llama.attention.head_count_kv", uint32(heads)},
		{"llama.rope.dimension_count", uint32(embd / heads)},
		{"llama.attention.layer_norm_rms_epsilon", float32(1e-5)},
		{"llama.vocab_size", uint32(vocab)},
		{"tokenizer.ggml.model", "gpt2"},
		{"tokenizer.ggml.pre", "default"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.merges", []string{"Ġ Ġ"}},
		{"tokenizer.ggml.bos_token_id", uint32(bos)},
		{"tokenizer.ggml.eos_token_id", uint32(eos)},
		{"tokenizer.ggml.add_bos_token", false},
		{"tokenizer.ggml.add_eos_token", false},
	}
	return writeGGUF(w, meta, tensors)
}
