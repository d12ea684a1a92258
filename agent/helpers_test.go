package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// fakeLLM is a Provider driven by a function of the request. It records
// every request. Deltas are sent word by word when streaming.
type fakeLLM struct {
	mu       sync.Mutex
	requests []providers.ChatRequest
	reply    func(req providers.ChatRequest) (*providers.LLMResponse, error)
}

func (f *fakeLLM) Chat(ctx context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return f.reply(req)
}

func (f *fakeLLM) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	resp, err := f.Chat(ctx, req)
	if err != nil {
		return nil, err
	}
	for _, w := range strings.SplitAfter(resp.Content, " ") {
		if w != "" {
			onDelta(providers.Delta{Content: w})
		}
	}
	return resp, nil
}

func (f *fakeLLM) reqs() []providers.ChatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]providers.ChatRequest(nil), f.requests...)
}

func text(s string) (*providers.LLMResponse, error) {
	return &providers.LLMResponse{Content: s, FinishReason: providers.FinishStop}, nil
}

func call(id, name string, args map[string]any) providers.ToolCallRequest {
	b, _ := json.Marshal(args)
	return providers.ToolCallRequest{ID: id, Name: name, Arguments: args, RawArguments: string(b)}
}

// lastUser returns the text of the request's last user message.
func lastUser(req providers.ChatRequest) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == providers.RoleUser {
			return req.Messages[i].Text()
		}
	}
	return ""
}

// toolFunc is a Tool made of a function.
type toolFunc struct {
	name string
	fn   func(ctx context.Context, args map[string]any) (tools.Result, error)
}

func (t toolFunc) Name() string        { return t.name }
func (t toolFunc) Description() string { return "test tool " + t.name }
func (t toolFunc) Parameters() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{}}
}
func (t toolFunc) Execute(ctx context.Context, args map[string]any) (tools.Result, error) {
	return t.fn(ctx, args)
}

// toolList is a minimal ToolSet.
type toolList []toolFunc

func (l toolList) Definitions() []tools.Definition {
	var out []tools.Definition
	for _, t := range l {
		out = append(out, tools.Definition{Name: t.name, Description: t.Description(), Parameters: t.Parameters()})
	}
	return out
}

func (l toolList) Execute(ctx context.Context, name string, args map[string]any) (tools.Result, error) {
	for _, t := range l {
		if t.name == name {
			return t.fn(ctx, args)
		}
	}
	return tools.Result{}, fmt.Errorf("unknown tool %s", name)
}

// outbox collects outbound messages.
type outbox struct {
	mu  sync.Mutex
	got []bus.Outbound
}

func (o *outbox) PublishOutbound(_ context.Context, m bus.Outbound) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, m)
	return nil
}

func (o *outbox) all() []bus.Outbound {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]bus.Outbound(nil), o.got...)
}

// finals returns the final replies per session key, in order.
func (o *outbox) finals() map[string][]string {
	out := map[string][]string{}
	for _, m := range o.all() {
		if m.Final {
			out[m.SessionKey] = append(out[m.SessionKey], m.Content)
		}
	}
	return out
}

type harness struct {
	loop  *Loop
	llm   *fakeLLM
	out   *outbox
	store *session.FileStore
	ws    string
	done  []bus.Inbound
	mu    sync.Mutex
}

func newHarness(t *testing.T, llm *fakeLLM, ts ToolSet, tweak func(*LoopConfig)) *harness {
	t.Helper()
	dir := t.TempDir()
	store, err := session.NewFileStore(dir+"/sessions", session.FileStoreOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{llm: llm, out: &outbox{}, store: store, ws: dir}
	cfg := LoopConfig{
		Store:   store,
		Builder: &ContextBuilder{Workspace: dir, Location: time.UTC},
		Runner:  &Runner{Provider: llm, Tools: ts, Model: "test-model", MaxIterations: 5, Stream: true},
		Out:     h.out,
		OnTurnDone: func(m bus.Inbound, _ error) {
			h.mu.Lock()
			h.done = append(h.done, m)
			h.mu.Unlock()
		},
		ContextWindowTokens: 10000,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	h.loop = NewLoop(cfg)
	t.Cleanup(func() {
		// Turns still saving write into dir, whose removal (the next
		// cleanup) would then fail: let running work end first. A test
		// that left a turn blocked for good is let go after a while.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.loop.WaitIdle(ctx)
		// The count of waiting messages must come back to 0 with the
		// queues, whatever the test did.
		if h.loop.Idle() && h.loop.Queued() != 0 {
			t.Errorf("the loop is idle with Queued() = %d, want 0", h.loop.Queued())
		}
	})
	return h
}

func (h *harness) send(chat, text string) {
	h.loop.Submit(context.Background(), bus.Inbound{Channel: "test", ChatID: chat, SenderID: "u", Content: text, MessageID: fmt.Sprint(time.Now().UnixNano())})
}

func (h *harness) doneCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.done)
}

// assemble builds an agent the way New does, on fresh folders and a fresh
// session store; tweak adjusts the config and deps first (Provider, Tools,
// Store and Out are filled in when left nil).
func assemble(t *testing.T, tweak func(*configs.Config, *Deps)) (*Agent, Deps) {
	t.Helper()
	cfg := configs.Default()
	cfg.Agents.Defaults.Workspace = t.TempDir()
	store, err := session.NewFileStore(t.TempDir(), session.FileStoreOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	deps := Deps{Provider: &fakeLLM{}, Model: "m", Tools: tools.NewRegistry(), Store: store, Out: &outbox{}}
	if tweak != nil {
		tweak(&cfg, &deps)
	}
	paths := configs.PathsFor(filepath.Join(t.TempDir(), "config.json"), &cfg)
	a, err := New(&cfg, paths, deps)
	if err != nil {
		t.Fatal(err)
	}
	return a, deps
}
