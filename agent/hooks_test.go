package agent

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// scriptedHooks records every event and answers by a function of it.
type scriptedHooks struct {
	points []HookPoint
	answer func(ev HookEvent) HookVerdict
	mu     sync.Mutex
	events []HookEvent
}

func (s *scriptedHooks) Has(p HookPoint) bool { return slices.Contains(s.points, p) }

func (s *scriptedHooks) Run(_ context.Context, ev HookEvent) HookVerdict {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
	if s.answer == nil {
		return HookVerdict{}
	}
	return s.answer(ev)
}

func (s *scriptedHooks) at(p HookPoint) []HookEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []HookEvent
	for _, ev := range s.events {
		if ev.Point == p {
			out = append(out, ev)
		}
	}
	return out
}

func allPoints() []HookPoint {
	var ps []HookPoint
	for _, n := range HookPoints() {
		p, _ := ParseHookPoint(n)
		ps = append(ps, p)
	}
	return ps
}

// TestHookPointNames: the config's point names are the agent's.
func TestHookPointNames(t *testing.T) {
	if got, want := HookPoints(), configs.HookPoints; !slices.Equal(got, want) {
		t.Fatalf("agent points %v, configs points %v", got, want)
	}
}

// toolThenReply asks for one tool call, then replies with text.
func toolThenReply(tool string, args map[string]any, reply string) *fakeLLM {
	return &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == providers.RoleTool {
			return text(reply)
		}
		return &providers.LLMResponse{ToolCalls: []providers.ToolCallRequest{call("c1", tool, args)}}, nil
	}}
}

// TestHookPointsFire: every point of a turn with one tool call fires once
// (the model twice), with its data, and /new fires session_reset.
func TestHookPointsFire(t *testing.T) {
	var ran []map[string]any
	var mu sync.Mutex
	echo := toolFunc{name: "echo", fn: func(_ context.Context, args map[string]any) (tools.Result, error) {
		mu.Lock()
		ran = append(ran, args)
		mu.Unlock()
		return tools.Result{Content: "echoed"}, nil
	}}
	hk := &scriptedHooks{points: allPoints()}
	llm := toolThenReply("echo", map[string]any{"x": "1"}, "all done")
	h := newHarness(t, llm, toolList{echo}, func(c *LoopConfig) { c.Hooks = hk; c.Runner.Hooks = hk })

	h.send("c", "hello")
	waitfor.True(t, "the turn", func() bool { return h.doneCount() == 1 })
	waitfor.True(t, "turn_end", func() bool { return len(hk.at(HookTurnEnd)) == 1 })

	counts := map[HookPoint]int{HookInbound: 1, HookBeforeModel: 2, HookAfterModel: 2, HookBeforeTool: 1, HookAfterTool: 1, HookBeforeReply: 1, HookTurnEnd: 1}
	for p, want := range counts {
		if got := len(hk.at(p)); got != want {
			t.Errorf("%s fired %d times, want %d", p, got, want)
		}
	}
	in := hk.at(HookInbound)[0]
	if in.Data["text"] != "hello" || in.Session != "test:c" || in.Channel != "test" || in.Chat != "c" || in.Sender != "u" {
		t.Errorf("inbound event %+v", in)
	}
	if bt := hk.at(HookBeforeTool)[0]; bt.Data["tool"] != "echo" || bt.Data["arguments"].(map[string]any)["x"] != "1" || bt.Session != "test:c" {
		t.Errorf("before_tool event %+v", bt)
	}
	if at := hk.at(HookAfterTool)[0]; at.Data["result"] != "echoed" || at.Data["failed"] != false {
		t.Errorf("after_tool event %+v", at)
	}
	if bm := hk.at(HookBeforeModel)[0]; bm.Data["prompt"] == nil || !strings.Contains(bm.Data["prompt"].(string), "hello") {
		t.Errorf("before_model event %+v", bm)
	}
	if am := hk.at(HookAfterModel)[1]; am.Data["content"] != "all done" {
		t.Errorf("after_model event %+v", am)
	}
	if br := hk.at(HookBeforeReply)[0]; br.Data["text"] != "all done" || br.Data["final"] != true {
		t.Errorf("before_reply event %+v", br)
	}
	if te := hk.at(HookTurnEnd)[0]; te.Data["reply"] != "all done" || te.Data["model_calls"] != 2 {
		t.Errorf("turn_end event %+v", te)
	}
	// While before_reply listens nothing is streamed: the hook sees the
	// whole reply before the chat does.
	for _, o := range h.out.all() {
		if o.Kind == bus.KindDelta {
			t.Errorf("a delta was published while a before_reply hook listens: %q", o.Content)
		}
	}

	h.send("c", "/new")
	waitfor.True(t, "session_reset", func() bool { return len(hk.at(HookSessionReset)) == 1 })
	if r := hk.at(HookSessionReset)[0]; r.Session != "test:c" || r.Channel != "test" {
		t.Errorf("session_reset event %+v", r)
	}
}

// TestHookModifyAndVeto: a before_tool hook rewrites one call's arguments
// and vetoes another's, a before_reply hook redacts a word, an inbound
// hook drops a message, a before_model hook adds context.
func TestHookModifyAndVeto(t *testing.T) {
	var mu sync.Mutex
	var got []string
	record := func(name string) toolFunc {
		return toolFunc{name: name, fn: func(_ context.Context, args map[string]any) (tools.Result, error) {
			mu.Lock()
			got = append(got, name+":"+args["path"].(string))
			mu.Unlock()
			return tools.Result{Content: "ok"}, nil
		}}
	}
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		// The hook's note comes last, after the tool results.
		if slices.ContainsFunc(req.Messages, func(m providers.Message) bool { return m.Role == providers.RoleTool }) {
			return text("the password is swordfish")
		}
		return &providers.LLMResponse{ToolCalls: []providers.ToolCallRequest{
			call("a", "read", map[string]any{"path": "notes.txt"}),
			call("b", "delete", map[string]any{"path": "notes.txt"}),
		}}, nil
	}}
	hk := &scriptedHooks{points: []HookPoint{HookInbound, HookBeforeModel, HookBeforeTool, HookBeforeReply}, answer: func(ev HookEvent) HookVerdict {
		switch ev.Point {
		case HookInbound:
			if ev.Data["text"] == "drop me" {
				return HookVerdict{Veto: true, Reason: "spam"}
			}
		case HookBeforeModel:
			return HookVerdict{Data: map[string]any{"context": "the user is in Lisbon"}}
		case HookBeforeTool:
			if ev.Data["tool"] == "delete" {
				return HookVerdict{Veto: true, Reason: "deleting is not allowed"}
			}
			return HookVerdict{Data: map[string]any{"tool": "read", "arguments": map[string]any{"path": "safe.txt"}}}
		case HookBeforeReply:
			return HookVerdict{Data: map[string]any{"text": strings.ReplaceAll(ev.Data["text"].(string), "swordfish", "[redacted]")}}
		}
		return HookVerdict{}
	}}
	h := newHarness(t, llm, toolList{record("read"), record("delete")}, func(c *LoopConfig) { c.Hooks = hk; c.Runner.Hooks = hk })

	h.send("c", "drop me")
	waitfor.True(t, "the dropped message done", func() bool { return h.doneCount() == 1 })
	if n := len(llm.reqs()); n != 0 {
		t.Fatalf("a dropped message reached the model (%d calls)", n)
	}

	h.send("c", "tidy up")
	waitfor.True(t, "the turn", func() bool { return h.doneCount() == 2 })
	if want := []string{"read:safe.txt"}; !slices.Equal(got, want) {
		t.Errorf("tools ran %v, want %v", got, want)
	}
	if f := h.out.finals()["test:c"]; len(f) != 1 || f[0] != "the password is [redacted]" {
		t.Errorf("final replies %q, want the redacted one", f)
	}
	reqs := llm.reqs()
	second := reqs[1].Messages
	var vetoed string
	for _, m := range second {
		if m.Role == providers.RoleTool && m.Name == "delete" {
			vetoed = m.Content
		}
	}
	if !strings.Contains(vetoed, "deleting is not allowed") {
		t.Errorf("the model read %q for the vetoed call, want the hook's reason", vetoed)
	}
	if !strings.Contains(reqs[0].Messages[len(reqs[0].Messages)-1].Content, "the user is in Lisbon") {
		t.Errorf("before_model context not in the prompt: %+v", reqs[0].Messages[len(reqs[0].Messages)-1])
	}
	// The note is for the call only: not stored.
	sess, err := h.store.Load(context.Background(), "test:c")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range sess.History(0) {
		if strings.Contains(m.Text(), "Lisbon") {
			t.Errorf("the hook's context was stored: %q", m.Text())
		}
	}
}

// An inbound veto answers a chat with nothing, but an API request, whose
// client waits on the open request (and its slot), with the refusal.
func TestInboundVetoAnswersOnlyTheAPI(t *testing.T) {
	hk := &scriptedHooks{points: []HookPoint{HookInbound}, answer: func(HookEvent) HookVerdict {
		return HookVerdict{Veto: true, Reason: "no"}
	}}
	h := newHarness(t, &fakeLLM{}, nil, func(c *LoopConfig) { c.Hooks = hk; c.Runner.Hooks = hk })
	h.send("c", "hi")
	h.loop.Submit(context.Background(), bus.Inbound{Channel: "api", ChatID: "r1", SenderID: "k", Content: "hi", MessageID: "1", Source: bus.SourceAPI})
	waitfor.True(t, "both dropped", func() bool { return h.doneCount() == 2 })
	if f := h.out.finals()["test:c"]; len(f) != 0 {
		t.Errorf("the chat was answered: %q", f)
	}
	if f := h.out.finals()["api:r1"]; len(f) != 1 || !strings.Contains(f[0], "a hook set up by the owner refused it") {
		t.Errorf("the API request was answered %q, want the refusal", f)
	}
}

// A secret an after_tool hook writes into a result is masked before the
// model or the session sees it, as the tool's own output would be.
func TestAfterToolHookCannotPutBackASecret(t *testing.T) {
	const secret = "sk-hooksecret-0123456789abcdef"
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		if slices.ContainsFunc(req.Messages, func(m providers.Message) bool { return m.Role == providers.RoleTool }) {
			return text("done")
		}
		return &providers.LLMResponse{ToolCalls: []providers.ToolCallRequest{call("a", "read", map[string]any{"path": "x"})}}, nil
	}}
	hk := &scriptedHooks{points: []HookPoint{HookAfterTool}, answer: func(HookEvent) HookVerdict {
		return HookVerdict{Data: map[string]any{"result": "tool said: " + secret}}
	}}
	read := toolFunc{name: "read", fn: func(context.Context, map[string]any) (tools.Result, error) { return tools.Result{Content: "ok"}, nil }}
	h := newHarness(t, llm, toolList{read}, func(c *LoopConfig) {
		c.Hooks, c.Runner.Hooks, c.Runner.Redact = hk, hk, redact.New(secret)
	})
	h.send("c", "go")
	waitfor.True(t, "the turn", func() bool { return h.doneCount() == 1 })
	for _, req := range llm.reqs() {
		for _, m := range req.Messages {
			if strings.Contains(m.Content, secret) {
				t.Errorf("the model was sent the hook's secret: %q", m.Content)
			}
		}
	}
	sess, err := h.store.Load(context.Background(), "test:c")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range sess.History(0) {
		if strings.Contains(m.Text(), secret) {
			t.Errorf("the session stored the hook's secret: %q", m.Text())
		}
	}
}

// TestHookVetoReply: a vetoed reply is replaced by the notice.
func TestHookVetoReply(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("something rude") }}
	hk := &scriptedHooks{points: []HookPoint{HookBeforeReply}, answer: func(ev HookEvent) HookVerdict {
		return HookVerdict{Veto: true, Reason: "rude"}
	}}
	h := newHarness(t, llm, nil, func(c *LoopConfig) { c.Hooks = hk; c.Runner.Hooks = hk })
	h.send("c", "hi")
	waitfor.True(t, "the turn", func() bool { return h.doneCount() == 1 })
	if f := h.out.finals()["test:c"]; len(f) != 1 || f[0] != withheldNotice {
		t.Errorf("final replies %q, want the notice", f)
	}
	for _, o := range h.out.all() {
		if strings.Contains(o.Content, "rude") {
			t.Errorf("the vetoed text reached the chat: %+v", o)
		}
	}
}

// TestHookVetoModel: a vetoed model call ends the turn with a told error.
func TestHookVetoModel(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("never") }}
	hk := &scriptedHooks{points: []HookPoint{HookBeforeModel}, answer: func(HookEvent) HookVerdict { return HookVerdict{Veto: true, Reason: "quiet hours"} }}
	h := newHarness(t, llm, nil, func(c *LoopConfig) { c.Hooks = hk; c.Runner.Hooks = hk })
	h.send("c", "hi")
	waitfor.True(t, "the turn", func() bool { return h.doneCount() == 1 })
	if n := len(llm.reqs()); n != 0 {
		t.Errorf("the model was called %d times after a veto", n)
	}
	if f := h.out.finals()["test:c"]; len(f) != 1 || !strings.Contains(f[0], "hook") {
		t.Errorf("final replies %q, want the veto's message", f)
	}
}

// TestSlowReplyHookDoesNotHoldSubmit: while one chat's before_reply hook
// is stuck, a /stop from another chat is answered at once: the loop's own
// notices given in Submit skip the reply hooks.
func TestSlowReplyHookDoesNotHoldSubmit(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("an answer") }}
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	hk := &scriptedHooks{points: []HookPoint{HookBeforeReply}, answer: func(ev HookEvent) HookVerdict {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		return HookVerdict{}
	}}
	h := newHarness(t, llm, nil, func(c *LoopConfig) { c.Hooks = hk; c.Runner.Hooks = hk })
	h.send("slow", "hi")
	<-entered // the slow chat's reply hook is running and stuck
	h.send("other", "/stop")
	waitfor.True(t, "the other chat's /stop answered", func() bool { return len(h.out.finals()["test:other"]) == 1 })
	close(release)
	waitfor.True(t, "the slow chat's turn to end", func() bool { return h.doneCount() == 2 })
}
