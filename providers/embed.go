package providers

import "context"

// Embedder turns texts into vectors: an OpenAI-compatible POST /embeddings.
// It is safe for concurrent use.
type Embedder interface {
	Embed(ctx context.Context, req EmbedRequest) (*EmbedResponse, error)
}

// EmbedRequest is one embeddings call.
type EmbedRequest struct {
	// Model is the embedding model; Input the texts, one vector each.
	Model string
	Input []string
	// Dimensions asks a model that can shorten its vectors (OpenAI's
	// text-embedding-3) for this many; 0 leaves the model's own length.
	Dimensions int
}

// EmbedResponse holds one vector per input, in the order sent.
type EmbedResponse struct {
	Vectors [][]float32
	// Usage counts the input tokens (PromptTokens), as the vendor reports.
	Usage Usage
}
