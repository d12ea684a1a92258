package openai

import (
	"context"
	"fmt"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/internal/calltimer"
)

var _ providers.Embedder = (*Provider)(nil)

type embedRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

type embedResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Usage *chatUsage `json:"usage"`
}

// Embed calls POST {apiBase}/embeddings (on Azure, the deployment's).
func (p *Provider) Embed(ctx context.Context, req providers.EmbedRequest) (*providers.EmbedResponse, error) {
	if len(req.Input) == 0 {
		return &providers.EmbedResponse{}, nil
	}
	body, err := p.encode(embedRequest{Model: req.Model, Input: req.Input, EncodingFormat: "float", Dimensions: req.Dimensions}, false)
	if err != nil {
		return nil, p.requestError(err)
	}
	t := calltimer.Start(ctx, p.opts.RequestTimeout, 0)
	defer t.Stop()
	var out embedResponse
	if err := p.call(t.Context(), "embeddings", req.Model, body, &out); err != nil {
		return nil, p.classify(t, err)
	}
	vecs := make([][]float32, len(req.Input))
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(vecs) || vecs[d.Index] != nil {
			return nil, fmt.Errorf("%s: embeddings: the answer has a wrong or repeated index %d", p.name, d.Index)
		}
		vecs[d.Index] = d.Embedding
	}
	for i, v := range vecs {
		if len(v) == 0 {
			return nil, fmt.Errorf("%s: embeddings: no vector for input %d of %d", p.name, i, len(vecs))
		}
	}
	return &providers.EmbedResponse{Vectors: vecs, Usage: usageOf(out.Usage)}, nil
}
