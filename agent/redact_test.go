package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/redact"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/openai"
	"github.com/nanobot-go/nanobot/providers/providertest"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/shell"
)

// TestSecretsRedactedFromToolsAndReplies is issue 19 item 4: a configured
// secret reaches the model through `echo $KEY` in the real exec tool, and
// the model (a scripted OpenAI-compatible server, streaming) quotes it in a
// reply cut into many deltas. Neither the session file, nor anything sent
// to the channel, nor the next request to the model holds the secret; the
// [REDACTED] marks show the text did pass through.
func TestSecretsRedactedFromToolsAndReplies(t *testing.T) {
	const key = "gsk-canary-7F3a9Qx2LmPz0WvB"
	red := redact.New(key)

	ws := t.TempDir()
	exec, err := shell.New(shell.Options{Workspace: ws, ExtraEnv: []string{"DEPLOY_KEY=" + key}})
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry(tools.WithRedactor(red))
	if err := reg.Register(exec); err != nil {
		t.Fatal(err)
	}

	llm := providertest.New(t)
	llm.Push(
		providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "exec", Arguments: `{"command":"echo the key is $DEPLOY_KEY"}`}}},
		// 60 pieces of a ~90-byte text: the key is split across deltas.
		providertest.Reply{Text: "Your deploy key is " + key + ", and again: " + key + ". Keep it safe.", Chunks: 60},
	)
	provider, err := openai.New(openai.Options{Endpoint: providers.Endpoint{APIBase: llm.OpenAIBase(), HTTPClient: llm.Client()}})
	if err != nil {
		t.Fatal(err)
	}

	store, err := session.NewFileStore(filepath.Join(ws, "sessions"), session.FileStoreOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	out := &outbox{}
	done := make(chan error, 1)
	loop := NewLoop(LoopConfig{
		Store:   store,
		Builder: &ContextBuilder{Workspace: ws, Location: time.UTC},
		Runner: &Runner{Provider: provider, Tools: reg, Model: "test-model", MaxIterations: 5, Stream: true,
			Redact: red},
		Out:                 out,
		OnTurnDone:          func(_ bus.Inbound, err error) { done <- err },
		ContextWindowTokens: 10000,
	})
	h := &harness{loop: loop, out: out}
	h.send("c", "what is my deploy key?")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the turn did not finish")
	}

	var sent strings.Builder
	deltas := 0
	for _, m := range out.all() {
		sent.WriteString(m.Content)
		if !m.Final {
			deltas++
		}
	}
	if deltas < 5 {
		t.Fatalf("only %d streamed messages; the reply was not streamed in pieces", deltas)
	}
	if strings.Contains(sent.String(), key) || strings.Contains(sent.String(), "7F3a9Qx2") {
		t.Errorf("the channel got the key: %q", sent.String())
	}
	if !strings.Contains(sent.String(), "Your deploy key is "+redact.Mask) {
		t.Errorf("the reply did not come through redacted: %q", sent.String())
	}

	reqs := llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if raw := string(reqs[1].Raw); strings.Contains(raw, key) || !strings.Contains(raw, "the key is "+redact.Mask) {
		t.Errorf("the tool result went to the model unredacted (or not at all):\n%s", raw)
	}

	var files int
	_ = filepath.WalkDir(filepath.Join(ws, "sessions"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if strings.Contains(string(data), key) {
			t.Errorf("session file %s holds the key:\n%s", path, data)
		}
		if strings.HasSuffix(path, ".jsonl") && strings.Count(string(data), redact.Mask) < 3 {
			t.Errorf("session file %s: want the tool result and the reply saved redacted:\n%s", path, data)
		}
		return nil
	})
	if files == 0 {
		t.Fatal("no session file written")
	}
}

// TestRunnerStreamsAllTextWithoutSecrets checks the runner's delta
// hold-back directly: every split of a reply gives the same text, without
// the key, and nothing held back is lost.
func TestRunnerStreamsAllTextWithoutSecrets(t *testing.T) {
	const key = "k3y-0123456789"
	reply := "a " + key + " b " + key
	for chunk := 1; chunk <= len(reply); chunk++ {
		llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text(reply) }}
		r := &Runner{Provider: chunked{llm, chunk}, Stream: true, Redact: redact.New(key)}
		var got strings.Builder
		res, err := r.Run(context.Background(), nil, func(e Event) {
			if e.Kind == EventDelta {
				if strings.Contains(e.Text, "0123") {
					t.Fatalf("chunk %d: a delta shows part of the key: %q", chunk, e.Text)
				}
				got.WriteString(e.Text)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		want := "a " + redact.Mask + " b " + redact.Mask
		if got.String() != want || res.Content != want || res.Messages[0].Content != want {
			t.Fatalf("chunk %d: deltas %q, content %q, saved %q; want %q", chunk, got.String(), res.Content, res.Messages[0].Content, want)
		}
	}
}

// chunked streams a provider's reply in pieces of n bytes.
type chunked struct {
	p *fakeLLM
	n int
}

func (c chunked) Chat(ctx context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	return c.p.Chat(ctx, req)
}

func (c chunked) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	resp, err := c.p.Chat(ctx, req)
	if err != nil {
		return nil, err
	}
	for s := resp.Content; s != ""; {
		n := min(c.n, len(s))
		onDelta(providers.Delta{Content: s[:n]})
		s = s[n:]
	}
	return resp, nil
}

// TestToolHintsAreRedacted: a tool hint is text the agent publishes like a
// reply: a secret in a tool's argument is masked in it, also when the hint
// is cut short right through the secret (a cut secret no longer matches,
// so it is masked before the cut).
func TestToolHintsAreRedacted(t *testing.T) {
	const key = "sk-canary-Q8w7E6r5T4y3U2i1O0pA"
	red := redact.New(key)
	calls := []providers.ToolCallRequest{
		call("c1", "exec", map[string]any{"command": "curl -H 'Authorization: Bearer " + key + "' https://api.example.com"}),
		// 50 characters before the key: the 60-rune cut falls inside it.
		call("c2", "exec", map[string]any{"command": strings.Repeat("x", 50) + " " + key}),
	}
	step := 0
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) {
		step++
		if step == 1 {
			return &providers.LLMResponse{ToolCalls: calls, FinishReason: providers.FinishToolCalls}, nil
		}
		return text("done")
	}}
	exec := toolFunc{name: "exec", fn: func(context.Context, map[string]any) (tools.Result, error) { return tools.Result{Content: "ok"}, nil }}
	h := newHarness(t, llm, toolList{exec}, func(c *LoopConfig) { c.Runner.Redact = red })
	h.send("c", "call the API")
	waitfor.True(t, "the turn", func() bool { return h.doneCount() == 1 })
	hints := 0
	for _, m := range h.out.all() {
		if m.Kind != bus.KindToolHint {
			continue
		}
		hints++
		if strings.Contains(m.Content, key[:12]) {
			t.Errorf("tool hint shows (part of) the key: %q", m.Content)
		}
	}
	if hints != 2 {
		t.Fatalf("%d tool hints, want 2", hints)
	}
}
