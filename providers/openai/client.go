package openai

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/nanobot-go/nanobot/providers/internal/wire"
)

// userAgent names us to the server; some gateways refuse Go's default.
const userAgent = "nanobot (OpenAI-compatible)"

// endpoint is the URL of an API path ("chat/completions", "responses").
func (p *Provider) endpoint(path, model string) string {
	base := strings.TrimRight(p.opts.APIBase, "/")
	if p.opts.AzureAPIVersion != "" {
		// The deployment is the model; the version is a query parameter.
		return base + "/openai/deployments/" + url.PathEscape(model) + "/" + path +
			"?api-version=" + url.QueryEscape(p.opts.AzureAPIVersion)
	}
	return base + "/" + path
}

// encode marshals a request body with Options.ExtraBody; see wire.Encode.
func (p *Provider) encode(body any, stream bool) ([]byte, error) {
	return wire.Encode(body, p.opts.ExtraBody, stream)
}

// header is what every request carries: our name, the key, then
// Options.ExtraHeaders, which win.
func (p *Provider) header() http.Header {
	h := http.Header{}
	h.Set("User-Agent", userAgent)
	switch {
	case p.opts.AzureAPIVersion != "" && p.opts.APIKey != "":
		h.Set("Api-Key", p.opts.APIKey)
	case p.opts.AzureAPIVersion != "":
		// Entra ID: the client's transport adds the bearer token.
	case p.opts.APIKey != "":
		h.Set("Authorization", "Bearer "+p.opts.APIKey)
	}
	for k, v := range p.opts.ExtraHeaders {
		h.Set(k, v)
	}
	return h
}

// post sends body to path; see wire.Post. extra headers (a Prepare hook's)
// are added to header()'s.
func (p *Provider) post(ctx context.Context, path, model string, body []byte, stream bool, extra ...http.Header) (*http.Response, error) {
	return wire.Post(ctx, p.opts.HTTPClient, p.endpoint(path, model), withHeaders(p.header(), extra), body, stream)
}

// call sends a non-streaming request and decodes the answer into out.
func (p *Provider) call(ctx context.Context, path, model string, body []byte, out any, extra ...http.Header) error {
	return wire.Call(ctx, p.opts.HTTPClient, p.endpoint(path, model), withHeaders(p.header(), extra), body, out)
}

func withHeaders(h http.Header, extra []http.Header) http.Header {
	for _, e := range extra {
		for k, v := range e {
			h[k] = v
		}
	}
	return h
}

// isDone reports OpenAI's end-of-stream marker.
func isDone(data []byte) bool { return bytes.HasPrefix(data, []byte("[DONE]")) }
