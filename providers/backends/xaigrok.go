package backends

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/openai"
)

// xaiGrokProvider is the registry name of the Grok subscription sign-in.
const xaiGrokProvider = "xai-grok"

// How long the model catalog's answer (which models can search X) is
// kept, and how long one look at it may take.
const (
	grokCatalogTTL     = 5 * time.Minute
	grokCatalogTimeout = 10 * time.Second
)

// xaiGrok builds the backend of xAI's subscription proxy
// (cli-chat-proxy.grok.com/v1/responses), the Responses API with the
// conventions of xAI's Grok CLI, which the Python nanobot follows and so
// does this:
//
//   - every call is streamed (Chat too);
//   - the body asks for parallel, streamed tool calls, tool_choice "auto",
//     and a concise reasoning summary (the effort when one is set, none
//     for "none"); keys of providers.xaiGrok.extraBody win;
//   - x-grok-model-override names the model (the sign-in's transport adds
//     the token and the other Grok client headers);
//   - hosted X Search: the model catalog ({apiBase}/models, looked at at
//     most every 5 minutes) says which models support backend search;
//     those get {"type": "x_search"} among their tools, replacing a
//     function tool of that name. extraBody.tools, as in nanobot, is
//     appended to the agent's tools rather than replacing them, and turns
//     the catalog off: "tools": [] means no hosted search.
//
// A 403 (no subscription) and a 426 (client too old) are explained in the
// error; the rest is classified as for any provider.
func xaiGrok(res providers.Resolution, opts providers.Options) (providers.Provider, error) {
	o := openAIOptions(res, opts)
	extra := maps.Clone(res.ExtraBody)
	tools, toolsSet := extra["tools"]
	delete(extra, "tools")
	o.ExtraBody = extra
	o.AlwaysStream = true
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &grokShape{
		catalog:      &grokCatalog{hc: hc, url: strings.TrimRight(res.APIBase, "/") + "/models", log: log.With("provider", res.Provider), now: time.Now},
		toolsSet:     toolsSet,
		ownReasoning: hasKey(res.ExtraBody, "reasoning"),
	}
	if toolsSet {
		raw, err := json.Marshal(tools)
		if err != nil {
			return nil, fmt.Errorf("extraBody.tools: %w", err)
		}
		s.tools = raw
		if list, ok := tools.([]any); ok {
			s.toolList = make([]json.RawMessage, 0, len(list))
			for i, t := range list {
				b, err := json.Marshal(t)
				if err != nil {
					return nil, fmt.Errorf("extraBody.tools[%d]: %w", i, err)
				}
				s.toolList = append(s.toolList, b)
			}
		}
	}
	o.Prepare = s.prepare
	p, err := openai.NewResponses(o)
	if err != nil {
		return nil, err
	}
	return grok{p: p}, nil
}

func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

// grokShape adapts each request body to the proxy (see xaiGrok). Safe for
// concurrent use.
type grokShape struct {
	catalog *grokCatalog
	// toolsSet: extraBody names tools; tools is its value, toolList its
	// items when it is a list.
	toolsSet bool
	tools    json.RawMessage
	toolList []json.RawMessage
	// ownReasoning: extraBody sets reasoning itself.
	ownReasoning bool
}

func (s *grokShape) prepare(ctx context.Context, model string, fields map[string]json.RawMessage, header http.Header) error {
	header.Set("X-Grok-Model-Override", model)
	setDefault := func(k string, v json.RawMessage) {
		if _, ok := fields[k]; !ok {
			fields[k] = v
		}
	}
	setDefault("parallel_tool_calls", json.RawMessage("true"))
	setDefault("stream_tool_calls", json.RawMessage("true"))

	if !s.ownReasoning {
		var r struct {
			Effort string `json:"effort"`
		}
		_ = json.Unmarshal(fields["reasoning"], &r) // absent: no effort
		out := map[string]string{"summary": "concise"}
		if r.Effort != "" && r.Effort != "none" {
			out["effort"] = r.Effort
		}
		raw, err := json.Marshal(out)
		if err != nil {
			return fmt.Errorf("reasoning: %w", err)
		}
		fields["reasoning"] = raw
	}

	if s.toolsSet && s.toolList == nil {
		fields["tools"] = s.tools // not a list: sent as configured
		return nil
	}
	var tools []json.RawMessage
	if raw, ok := fields["tools"]; ok {
		if err := json.Unmarshal(raw, &tools); err != nil {
			return fmt.Errorf("request tools: %w", err)
		}
	}
	hosted, addSearch := false, false
	if s.toolsSet {
		tools = append(tools, s.toolList...)
		for _, t := range s.toolList {
			hosted = hosted || toolIs(t, "x_search", "")
		}
	} else if s.catalog.backendSearch(ctx, model) {
		hosted, addSearch = true, true
	}
	if hosted {
		// The hosted search answers for X itself; a function tool of the
		// same name would make two.
		kept := tools[:0]
		for _, t := range tools {
			if !toolIs(t, "function", "x_search") {
				kept = append(kept, t)
			}
		}
		tools = kept
	}
	if addSearch {
		tools = append(tools, json.RawMessage(`{"type":"x_search"}`))
	}
	if len(tools) == 0 {
		delete(fields, "tools")
		return nil
	}
	raw, err := json.Marshal(tools)
	if err != nil {
		return fmt.Errorf("request tools: %w", err)
	}
	fields["tools"] = raw
	setDefault("tool_choice", json.RawMessage(`"auto"`))
	return nil
}

// toolIs reports whether a tool definition has the type (and, when name
// is not empty, the name).
func toolIs(raw json.RawMessage, typ, name string) bool {
	var t struct{ Type, Name string }
	if json.Unmarshal(raw, &t) != nil {
		return false
	}
	return t.Type == typ && (name == "" || t.Name == name)
}

// grokCatalog remembers which models the proxy's catalog says support
// backend (X) search. A failed look is remembered as "none" for the same
// 5 minutes, so an unreachable catalog costs one slow call, not one per
// turn. Safe for concurrent use; concurrent looks share one request.
type grokCatalog struct {
	hc  *http.Client
	url string
	log *slog.Logger
	now func() time.Time
	sf  singleflight.Group

	mu      sync.Mutex
	search  map[string]bool
	fetched time.Time
}

// backendSearch reports whether the catalog says model supports backend
// search; false when the catalog cannot say.
func (c *grokCatalog) backendSearch(ctx context.Context, model string) bool {
	c.mu.Lock()
	search := c.search
	fresh := search != nil && c.now().Sub(c.fetched) < grokCatalogTTL
	c.mu.Unlock()
	if fresh {
		return search[model]
	}
	ch := c.sf.DoChan("catalog", func() (any, error) {
		// The look outlives a caller that gives up; it is bounded.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grokCatalogTimeout)
		defer cancel()
		m, err := c.fetch(fctx)
		if err != nil {
			c.log.Warn("the xAI model catalog cannot be read; hosted X Search is off until the next look", "error", err.Error())
			m = map[string]bool{}
		}
		c.mu.Lock()
		c.search, c.fetched = m, c.now()
		c.mu.Unlock()
		return m, nil
	})
	select {
	case r := <-ch:
		return r.Val.(map[string]bool)[model]
	case <-ctx.Done():
		return false
	}
}

func (c *grokCatalog) fetch(ctx context.Context) (map[string]bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %d", c.url, resp.StatusCode)
	}
	var payload any
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&payload); err != nil {
		return nil, fmt.Errorf("%s: not JSON: %w", c.url, err)
	}
	return parseGrokCatalog(payload), nil
}

// parseGrokCatalog reads {"data": [...]}, {"models": [...]} or a bare list
// of models, each naming itself by model, modelId or id (also under
// _meta) and saying supportsBackendSearch (or supports_backend_search,
// also under _meta). Names lose an "xai-grok/" prefix.
func parseGrokCatalog(payload any) map[string]bool {
	rows, _ := payload.([]any)
	if m, ok := payload.(map[string]any); ok {
		if rows, ok = m["data"].([]any); !ok {
			rows, _ = m["models"].([]any)
		}
	}
	out := map[string]bool{}
	for _, r := range rows {
		row, ok := r.(map[string]any)
		if !ok {
			continue
		}
		meta, _ := row["_meta"].(map[string]any)
		search := false
		for _, v := range []any{row["supportsBackendSearch"], row["supports_backend_search"], meta["supportsBackendSearch"], meta["supports_backend_search"]} {
			if b, ok := v.(bool); ok {
				search = b
				break
			}
		}
		for _, v := range []any{row["model"], row["modelId"], row["id"], meta["model"], meta["modelId"]} {
			if id, ok := v.(string); ok && strings.TrimSpace(id) != "" {
				id = strings.TrimSpace(id)
				for _, p := range []string{"xai-grok/", "xai_grok/"} {
					id = strings.TrimPrefix(id, p)
				}
				out[id] = search
			}
		}
	}
	return out
}

// grok explains the proxy's 403 and 426 answers. Safe for concurrent use
// when the wrapped provider is.
type grok struct {
	p providers.Provider
}

var _ providers.Provider = grok{}

func (g grok) Chat(ctx context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	resp, err := g.p.Chat(ctx, req)
	return resp, grokError(err)
}

func (g grok) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	resp, err := g.p.Stream(ctx, req, onDelta)
	return resp, grokError(err)
}

func grokError(err error) error {
	pe, ok := err.(*providers.Error)
	if !ok {
		return err
	}
	var why string
	switch pe.StatusCode {
	case http.StatusForbidden:
		why = "this xAI account or subscription cannot use the Grok subscription endpoint"
	case http.StatusUpgradeRequired:
		why = "xAI asks for a newer Grok client version than this nanobot announces; update nanobot"
	case http.StatusTooManyRequests:
		why = "xAI usage quota or rate limit reached"
	default:
		return err
	}
	out := *pe
	out.Message = why + " (" + pe.Message + ")"
	return &out
}
