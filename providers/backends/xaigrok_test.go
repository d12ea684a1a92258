package backends_test

import (
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/internal/syncbuf"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/auth"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

const grokToken = "xai_access_TOKEN_0123456789abcdef"

// grokSetup is the xai-grok provider over a stored sign-in (the real
// sign-in transport adds the token and the Grok client headers) against
// a providertest server standing in for xAI's subscription proxy.
type grokSetup struct {
	srv *providertest.Server
	p   providers.Provider
	log *syncbuf.Buffer
}

func newGrok(t *testing.T, st providers.Settings, cred auth.Credential) *grokSetup {
	t.Helper()
	g := &grokSetup{srv: providertest.New(t), log: &syncbuf.Buffer{}}
	store := auth.NewStore(filepath.Join(t.TempDir(), "auth.json"))
	if cred.AccessToken == "" {
		cred = auth.Credential{AccessToken: grokToken, ExpiresAt: time.Now().Add(time.Hour)}
	}
	if err := store.Put(auth.XAIGrok, cred); err != nil {
		t.Fatal(err)
	}
	si := auth.New(auth.Options{Store: store})
	st.SignedIn = true
	st.APIBase = g.srv.OpenAIBase()
	res, err := providers.Resolve("xai-grok/grok-4.5", "", map[string]providers.Settings{"xaiGrok": st})
	if err != nil {
		t.Fatal(err)
	}
	opts := options(g.srv)
	opts.SignIn = si.Client
	opts.Logger = slog.New(slog.NewTextHandler(g.log, nil))
	if g.p, err = providers.New(res, opts); err != nil {
		t.Fatal(err)
	}
	return g
}

func (g *grokSetup) calls(f providertest.Format) []providertest.Request {
	var out []providertest.Request
	for _, r := range g.srv.Requests() {
		if r.Format == f {
			out = append(out, r)
		}
	}
	return out
}

var grokTools = []providers.ToolDefinition{
	{Name: "read_file", Description: "read a file", Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}},
	{Name: "x_search", Description: "a local tool of the same name", Parameters: map[string]any{"type": "object"}},
}

func grokRequest(effort string) providers.ChatRequest {
	temp := 0.7
	return providers.ChatRequest{Model: "xai-grok/grok-4.5", MaxTokens: 4096, Temperature: &temp, ReasoningEffort: effort, Tools: grokTools,
		Messages: []providers.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "what is in go.mod?"}}}
}

func toolKinds(r providertest.Request) []string {
	var out []string
	tools, _ := r.Body["tools"].([]any)
	for _, t := range tools {
		m, _ := t.(map[string]any)
		name, _ := m["name"].(string)
		out = append(out, m["type"].(string)+":"+name)
	}
	return out
}

// TestXAIGrokStreamWithToolCall: a streamed answer with text and a tool
// call through the whole provider (sign-in transport, Responses backend,
// the proxy's conventions): deltas arrive as they stream, the tool call
// is parsed, and the request is what xAI's subscription proxy wants. The
// catalog says grok-4.5 can search X, so the hosted x_search replaces the
// local tool of that name, and the catalog is asked once for two calls.
func TestXAIGrokStreamWithToolCall(t *testing.T) {
	g := newGrok(t, providers.Settings{}, auth.Credential{})
	g.srv.SetModels(http.StatusOK, `{"data":[{"id":"grok-4.5","supportsBackendSearch":true},{"id":"grok-3","_meta":{"supports_backend_search":false}}]}`)
	g.srv.Push(providertest.Reply{Text: "Let me look.", Reasoning: "need the file", Encrypted: "enc-1",
		ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"go.mod"}`}}})
	var deltas []string
	resp, err := g.p.Stream(t.Context(), grokRequest("high"), func(d providers.Delta) { deltas = append(deltas, d.Content) })
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if len(deltas) < 2 || strings.Join(deltas, "") != "Let me look." {
		t.Errorf("deltas %q, want the text in several pieces", deltas)
	}
	if resp.FinishReason != providers.FinishToolCalls || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "read_file" ||
		resp.ToolCalls[0].Arguments["path"] != "go.mod" || resp.ToolCalls[0].ID != "call_1" {
		t.Fatalf("response %+v, want the read_file call", resp)
	}
	if len(resp.ReasoningItems) != 1 || resp.ReasoningItems[0].EncryptedContent != "enc-1" {
		t.Errorf("reasoning items %+v, want the encrypted one kept for the next turn", resp.ReasoningItems)
	}

	// Chat is served through a stream too.
	g.srv.Push(providertest.Reply{Text: "done"})
	if resp, err := g.p.Chat(t.Context(), grokRequest("none")); err != nil || resp.Content != "done" {
		t.Fatalf("Chat = %+v, %v", resp, err)
	}

	calls := g.calls(providertest.Responses)
	if len(calls) != 2 || len(g.calls(providertest.Models)) != 1 {
		t.Fatalf("%d responses calls and %d catalog looks, want 2 and 1", len(calls), len(g.calls(providertest.Models)))
	}
	for i, r := range calls {
		h := r.Header
		for k, want := range map[string]string{
			"Authorization": "Bearer " + grokToken, "X-Grok-Model-Override": "grok-4.5", "X-Xai-Token-Auth": "xai-grok-cli",
			"X-Grok-Client-Version": auth.XAIClientVersion, "X-Grok-Client-Mode": "headless", "Accept": "text/event-stream",
		} {
			if h.Get(k) != want {
				t.Errorf("call %d: %s = %q, want %q", i, k, h.Get(k), want)
			}
		}
		if h.Get("X-Grok-Conv-Id") == "" {
			t.Errorf("call %d: no conversation id", i)
		}
		b := r.Body
		if r.Path != "/v1/responses" || !r.Stream || r.Model != "grok-4.5" || b["store"] != false || b["instructions"] != "be brief" ||
			b["parallel_tool_calls"] != true || b["stream_tool_calls"] != true || b["tool_choice"] != "auto" ||
			b["max_output_tokens"] != float64(4096) || b["temperature"] != 0.7 {
			t.Errorf("call %d: %s %v", i, r.Path, b)
		}
		if diff := cmp.Diff([]string{"function:read_file", "x_search:"}, toolKinds(r)); diff != "" {
			t.Errorf("call %d tools (-want +got):\n%s", i, diff)
		}
	}
	if diff := cmp.Diff(map[string]any{"effort": "high", "summary": "concise"}, calls[0].Body["reasoning"]); diff != "" {
		t.Errorf("reasoning with an effort (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"summary": "concise"}, calls[1].Body["reasoning"]); diff != "" {
		t.Errorf("reasoning with effort none (-want +got):\n%s", diff)
	}
}

// TestXAIGrokExtraBody: providers.xaiGrok.extraBody as nanobot reads it:
// "tools" is appended to the agent's tools (never replacing them) and
// turns the catalog off ([] = no hosted search); other keys win over what
// the backend sends.
func TestXAIGrokExtraBody(t *testing.T) {
	for _, tc := range []struct {
		name      string
		extra     map[string]any
		wantTools []string
		check     func(t *testing.T, body map[string]any)
	}{
		{name: "tools [] turns hosted search off", extra: map[string]any{"tools": []any{}},
			wantTools: []string{"function:read_file", "function:x_search"}},
		{name: "a configured hosted x_search", extra: map[string]any{"tools": []any{map[string]any{"type": "x_search"}}},
			wantTools: []string{"function:read_file", "x_search:"}},
		{name: "own keys win", extra: map[string]any{"tools": []any{}, "parallel_tool_calls": false, "reasoning": map[string]any{"summary": "detailed"}},
			wantTools: []string{"function:read_file", "function:x_search"},
			check: func(t *testing.T, body map[string]any) {
				if body["parallel_tool_calls"] != false || body["stream_tool_calls"] != true {
					t.Errorf("parallel_tool_calls %v, stream_tool_calls %v", body["parallel_tool_calls"], body["stream_tool_calls"])
				}
				if diff := cmp.Diff(map[string]any{"summary": "detailed"}, body["reasoning"]); diff != "" {
					t.Errorf("reasoning (-want +got):\n%s", diff)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// No catalog is set: asking for it fails the test.
			g := newGrok(t, providers.Settings{ExtraBody: tc.extra}, auth.Credential{})
			g.srv.Push(providertest.Reply{Text: "ok"})
			if _, err := g.p.Stream(t.Context(), grokRequest("low"), nil); err != nil {
				t.Fatal(err)
			}
			r := g.calls(providertest.Responses)[0]
			if diff := cmp.Diff(tc.wantTools, toolKinds(r)); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if tc.check != nil {
				tc.check(t, r.Body)
			}
		})
	}
}

// TestXAIGrokCatalogUnavailable: a catalog that fails leaves hosted
// search off, the turn goes on, and the failure is remembered (one look
// for two calls).
func TestXAIGrokCatalogUnavailable(t *testing.T) {
	g := newGrok(t, providers.Settings{}, auth.Credential{})
	g.srv.SetModels(http.StatusBadGateway, `{"error":"upstream down"}`)
	g.srv.Push(providertest.Reply{Text: "one"}, providertest.Reply{Text: "two"})
	for range 2 {
		if _, err := g.p.Stream(t.Context(), grokRequest(""), nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(g.calls(providertest.Models)); n != 1 {
		t.Errorf("%d catalog looks, want 1", n)
	}
	if diff := cmp.Diff([]string{"function:read_file", "function:x_search"}, toolKinds(g.calls(providertest.Responses)[1])); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if !strings.Contains(g.log.String(), "hosted X Search is off") {
		t.Errorf("log:\n%s", g.log)
	}
}

// TestXAIGrokErrors: the proxy's answers become the typed provider
// errors, explained, and none carries the token even when the proxy
// quotes it back.
func TestXAIGrokErrors(t *testing.T) {
	echo := `{"error":{"message":"denied for Bearer ` + grokToken + `"},"access_token":"` + grokToken + `"}`
	for _, tc := range []struct {
		name      string
		reply     providertest.Reply
		transient bool
		signIn    bool
		inText    string
	}{
		{name: "403", reply: providertest.Reply{Status: 403, Body: echo}, inText: "subscription cannot use the Grok subscription endpoint"},
		{name: "426", reply: providertest.Reply{Status: 426}, inText: "newer Grok client version"},
		{name: "429 rate limit", reply: providertest.Reply{Status: 429, RetryAfter: "2"}, transient: true, inText: "rate limit"},
		{name: "429 quota", reply: providertest.Reply{Status: 429, Body: `{"error":{"message":"monthly quota exhausted"}}`}, inText: "quota"},
		{name: "500", reply: providertest.Reply{Status: 500, Body: echo}, transient: true, inText: "denied for"},
		// No refresh token is stored: the renewal after the 401 fails, and
		// the user is told to sign in again.
		{name: "401", reply: providertest.Reply{Status: 401, Body: echo}, signIn: true, inText: "nanobot provider login xai-grok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGrok(t, providers.Settings{ExtraBody: map[string]any{"tools": []any{}}}, auth.Credential{})
			g.srv.Push(tc.reply)
			_, err := g.p.Stream(t.Context(), grokRequest(""), nil)
			if err == nil {
				t.Fatal("no error")
			}
			var se *providers.SignInError
			if errors.As(err, &se) != tc.signIn || providers.IsTransient(err) != tc.transient || !strings.Contains(err.Error(), tc.inText) {
				t.Errorf("err = %v (sign-in %v, transient %v), want sign-in %v, transient %v, mentioning %q",
					err, errors.As(err, &se), providers.IsTransient(err), tc.signIn, tc.transient, tc.inText)
			}
			if strings.Contains(err.Error(), grokToken) || strings.Contains(g.log.String(), grokToken) {
				t.Errorf("the token shows in the error or the log: %v", err)
			}
		})
	}
}
