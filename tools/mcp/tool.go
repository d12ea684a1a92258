package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nanobot-go/nanobot/internal/untrusted"
	"github.com/nanobot-go/nanobot/tools"
)

// tool is one server tool offered to the model.
type tool struct {
	s           *server
	name        string // registered: mcp_<server>_<tool>
	remote      string // the server's name for it
	description string
	params      map[string]any
}

var _ tools.Tool = (*tool)(nil)

func (t *tool) Name() string               { return t.name }
func (t *tool) Description() string        { return t.description }
func (t *tool) Parameters() map[string]any { return t.params }

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// ToolName is the registered name of a server's tool: mcp_<server>_<tool>
// with every character providers refuse replaced by "_", shortened to 64
// characters with a hash suffix when longer.
func ToolName(server, name string) string {
	n := "mcp_" + unsafeName.ReplaceAllString(server, "_") + "_" + unsafeName.ReplaceAllString(name, "_")
	if len(n) <= 64 {
		return n
	}
	sum := sha256.Sum256([]byte(server + "\x00" + name))
	return n[:55] + "_" + hex.EncodeToString(sum[:])[:8]
}

// enabled reports whether the entry's enabledTools admits a tool.
func (s *server) enabled(remote string) bool {
	for _, e := range s.cfg.EnabledTools {
		if e == "*" || e == remote || e == ToolName(s.name, remote) {
			return true
		}
	}
	return false
}

// register reconciles the registry with the server's current tool list and
// returns how many of its tools are offered.
func (s *server) register(list []*sdk.Tool) int {
	want := map[string]*tool{}
	for _, t := range list {
		if t == nil || !s.enabled(t.Name) {
			continue
		}
		name := ToolName(s.name, t.Name)
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		if desc == "" {
			desc = t.Name
		}
		want[name] = &tool{s: s, name: name, remote: t.Name, description: desc + " (MCP server " + s.name + ")", params: schemaOf(t.InputSchema)}
	}
	s.mu.Lock()
	old := s.tools
	s.mu.Unlock()
	for name, t := range old {
		if nt, ok := want[name]; ok && nt.description == t.description && sameSchema(nt.params, t.params) {
			want[name] = t
			continue
		}
		s.m.reg.Unregister(name)
	}
	kept := map[string]*tool{}
	for name, t := range want {
		if old[name] == t {
			kept[name] = t
			continue
		}
		if err := s.m.reg.Register(t); err != nil {
			s.log.Warn("mcp tool not registered", "tool", name, "err", err)
			continue
		}
		kept[name] = t
	}
	s.mu.Lock()
	s.tools = kept
	s.mu.Unlock()
	return len(kept)
}

// schemaOf turns the server's input schema into the map the registry
// compiles (providers normalise it further when they send it).
func schemaOf(v any) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		b, err := json.Marshal(v)
		if err == nil {
			_ = json.Unmarshal(b, &m)
		}
	}
	if m == nil {
		m = map[string]any{}
	}
	if m["type"] == nil {
		m["type"] = "object"
	}
	if _, ok := m["properties"]; !ok {
		m["properties"] = map[string]any{}
	}
	return m
}

func sameSchema(a, b map[string]any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// Execute calls the tool on the server within toolTimeout. A call that
// fails because the connection was lost is retried once on the new one.
func (t *tool) Execute(ctx context.Context, args map[string]any) (tools.Result, error) {
	timeout := time.Duration(t.s.cfg.ToolTimeout) * time.Second
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if args == nil {
		args = map[string]any{}
	}
	for attempt := 0; ; attempt++ {
		sess, err := t.s.session(ctx)
		if err != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return tools.Result{}, fmt.Errorf("%s: server %s did not come back within %s: %w", t.name, t.s.name, timeout, err)
			}
			return tools.Result{}, err
		}
		res, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: t.remote, Arguments: args})
		if err == nil {
			return t.result(res)
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return tools.Result{}, fmt.Errorf("%s timed out after %s (tools.mcpServers.%s.toolTimeout)", t.name, timeout, t.s.name)
		}
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		lost := errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing)
		var rpcErr *jsonrpc.Error
		if (!lost && errors.As(err, &rpcErr)) || attempt > 0 {
			return tools.Result{}, fmt.Errorf("%s: %w", t.name, err)
		}
		// The connection failed under the call: reconnect and retry once.
		t.s.log.Warn("mcp call failed on the connection; reconnecting", "tool", t.name, "err", err)
		t.s.drop(sess)
	}
}

// result converts what the server returned into what the model sees.
func (t *tool) result(res *sdk.CallToolResult) (tools.Result, error) {
	var out tools.Result
	var texts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			texts = append(texts, c.Text)
		case *sdk.ImageContent:
			out.Images = append(out.Images, tools.Image{MIMEType: c.MIMEType, Data: c.Data})
			texts = append(texts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			texts = append(texts, fmt.Sprintf("[audio %s, %d bytes: not shown]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			texts = append(texts, fmt.Sprintf("[resource %s: %s]", c.Name, c.URI))
		case *sdk.EmbeddedResource:
			if r := c.Resource; r != nil {
				switch {
				case r.Text != "":
					texts = append(texts, fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
				case strings.HasPrefix(r.MIMEType, "image/"):
					out.Images = append(out.Images, tools.Image{MIMEType: r.MIMEType, Data: r.Blob})
					texts = append(texts, fmt.Sprintf("[image resource %s]", r.URI))
				default:
					texts = append(texts, fmt.Sprintf("[resource %s, %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
				}
			}
		}
	}
	if res.StructuredContent != nil && !slices.ContainsFunc(res.Content, func(c sdk.Content) bool { _, ok := c.(*sdk.TextContent); return ok }) {
		if b, err := json.MarshalIndent(res.StructuredContent, "", "  "); err == nil {
			texts = append(texts, string(b))
		}
	}
	text := strings.Join(texts, "\n")
	if t.s.cfg.Type != "stdio" && text != "" {
		text = untrusted.Wrap("mcp:"+t.s.name, text)
	}
	if res.IsError {
		if text == "" {
			text = "the tool reported an error"
		}
		return tools.Result{}, errors.New(text)
	}
	if text == "" && len(out.Images) == 0 {
		text = "(no output)"
	}
	out.Content = text
	return out, nil
}
