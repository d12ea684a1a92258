package anthropic

import (
	"context"
	"net/http"

	"github.com/nanobot-go/nanobot/providers/internal/wire"
)

// apiVersion is the anthropic-version header: the Messages API version
// whose wire this package speaks (the one the official SDK's tests pin).
const apiVersion = "2026-10-21"

// userAgent names us to the server.
const userAgent = "nanobot (Anthropic Messages)"

// endpoint is the Messages API URL.
func (p *Provider) endpoint() string { return p.base + "/v1/messages" }

// header is what every request carries: our name, the API version, the
// key, then Options.ExtraHeaders (anthropic-beta, a gateway's own header,
// another auth header), which win.
func (p *Provider) header() http.Header {
	h := http.Header{}
	h.Set("User-Agent", userAgent)
	h.Set("Anthropic-Version", apiVersion)
	if p.opts.APIKey != "" {
		h.Set("Authorization", "Bearer "+p.opts.APIKey)
	}
	for k, v := range p.opts.ExtraHeaders {
		h.Set(k, v)
	}
	return h
}

// postStream sends a streaming request; see wire.Post.
func (p *Provider) postStream(ctx context.Context, body []byte) (*http.Response, error) {
	return wire.Post(ctx, p.opts.HTTPClient, p.endpoint(), p.header(), body, true)
}
