package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/message"
	"github.com/nanobot-go/nanobot/tools/spawn"
)

// loopInbox feeds published inbound messages back into the loop, as the bus
// does in the gateway.
type loopInbox struct{ loop func() *Loop }

func (l loopInbox) publish(ctx context.Context, m bus.Inbound) error {
	l.loop().Submit(ctx, m)
	return nil
}

func TestSpawnResultReachesParentSession(t *testing.T) {
	var h *harness
	subs := &Subagents{Publish: loopInbox{loop: func() *Loop { return h.loop }}.publish, Workspace: "/ws"}
	var subTools []string
	llm := &fakeLLM{}
	llm.reply = func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		sys := req.Messages[0].Content
		u := lastUser(req)
		switch {
		case strings.Contains(sys, "You are a sub-agent"):
			for _, d := range req.Tools {
				subTools = append(subTools, d.Name)
			}
			return text("The answer is 42.")
		case strings.Contains(u, "Background task"):
			return text("Your research finished: 42.")
		case req.Messages[len(req.Messages)-1].Role == providers.RoleTool:
			return text("I started a background task.")
		default:
			return &providers.LLMResponse{ToolCalls: []providers.ToolCallRequest{call("s1", "spawn", map[string]any{"task": "compute the answer", "label": "answer"})}}, nil
		}
	}
	ts := toolsRegistry(t, spawn.New(subs), message.New(&outbox{}, message.Options{Workspace: t.TempDir()}), echoTool())
	h = newHarness(t, llm, ts, func(c *LoopConfig) { c.Subagents = subs })
	subs.Runner = *h.loop.cfg.Runner

	h.send("c", "research this")
	// Both turns done means both are saved (replies go out before the save).
	waitfor.True(t, "both turns", func() bool { return h.doneCount() == 2 })
	got := h.out.finals()["test:c"]
	if got[0] != "I started a background task." || got[1] != "Your research finished: 42." {
		t.Errorf("finals %v", got)
	}
	for _, name := range subTools {
		if name == "spawn" || name == "message" {
			t.Errorf("sub-agent was offered %s", name)
		}
	}
	if len(subTools) != 1 || subTools[0] != "echo" {
		t.Errorf("sub-agent tools %v, want [echo]", subTools)
	}
	s, _ := h.store.Load(context.Background(), "test:c")
	if !strings.Contains(s.Messages[len(s.Messages)-2].Content, "The answer is 42.") {
		t.Error("sub-agent result not stored in the parent session")
	}
}

func TestStopCancelsSubagents(t *testing.T) {
	var h *harness
	subs := &Subagents{Publish: loopInbox{loop: func() *Loop { return h.loop }}.publish}
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == providers.RoleTool {
			return text("started")
		}
		if strings.Contains(last.Text(), "anything else?") {
			return text("nothing else")
		}
		return &providers.LLMResponse{ToolCalls: []providers.ToolCallRequest{call("s1", "spawn", map[string]any{"task": "wait forever"})}}, nil
	}}
	h = newHarness(t, llm, toolsRegistry(t, spawn.New(subs)), func(c *LoopConfig) { c.Subagents = subs })
	subs.Runner = Runner{Provider: blockForever{}}
	h.send("c", "go")
	waitfor.True(t, "sub-agent running", func() bool { return subs.Running() == 1 })
	// The parent turn has answered; only the sub-agent is still running.
	waitfor.True(t, "parent turn done", func() bool { return h.doneCount() == 1 })
	h.send("c", "/stop")
	waitfor.True(t, "sub-agent cancelled", func() bool { return subs.Running() == 0 })
	// A sub-agent publishes its report before it stops counting as
	// running, and one chat's messages are answered in order: once a later
	// message is answered, a report would have been answered before it.
	h.send("c", "anything else?")
	waitfor.True(t, "the later message answered", func() bool {
		f := h.out.finals()["test:c"]
		return len(f) > 0 && f[len(f)-1] == "nothing else"
	})
	if f := h.out.finals()["test:c"]; len(f) != 3 || f[1] != "Stopped." {
		t.Errorf("finals %v, want the start, Stopped. and the later answer (a cancelled sub-agent must not report back)", f)
	}
}

type blockForever struct{}

func (blockForever) Chat(ctx context.Context, _ providers.ChatRequest) (*providers.LLMResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (b blockForever) Stream(ctx context.Context, r providers.ChatRequest, _ func(providers.Delta)) (*providers.LLMResponse, error) {
	return b.Chat(ctx, r)
}

func TestMessageToolReplyNotSentTwice(t *testing.T) {
	out := &outbox{}
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		if req.Messages[len(req.Messages)-1].Role == providers.RoleTool {
			return text("Here is your summary.")
		}
		return &providers.LLMResponse{ToolCalls: []providers.ToolCallRequest{call("m1", "message", map[string]any{"content": "Here is your summary."})}}, nil
	}}
	h := newHarness(t, llm, toolsRegistry(t, message.New(out, message.Options{Workspace: t.TempDir()})), func(c *LoopConfig) { c.Out = out })
	h.out = out
	h.send("c", "summarise")
	waitfor.True(t, "turn", func() bool { return h.doneCount() == 1 })
	n := 0
	for _, m := range out.all() {
		if strings.Contains(m.Content, "Here is your summary.") && (m.Kind == bus.KindMessage || m.Kind == bus.KindStreamEnd) {
			n++
		}
		if m.Kind == bus.KindDelta {
			t.Errorf("reply streamed after the message tool spoke: %q", m.Content)
		}
	}
	if n != 1 {
		t.Errorf("the reply was delivered %d times", n)
	}
}

func echoTool() tools.Tool {
	return toolFunc{name: "echo", fn: func(_ context.Context, a map[string]any) (tools.Result, error) {
		return tools.Result{Content: "echo"}, nil
	}}
}

// toolsRegistry wraps tools as a ToolSet.
func toolsRegistry(t *testing.T, ts ...tools.Tool) ToolSet {
	t.Helper()
	var l toolList
	for _, x := range ts {
		x := x
		l = append(l, toolFunc{name: x.Name(), fn: x.Execute})
	}
	return l
}
