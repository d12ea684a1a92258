package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent/session"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

func TestPlainTurnStreamsAndSaves(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("Hello there, friend.") }}
	h := newHarness(t, llm, nil, nil)
	h.send("c1", "hi")
	waitfor.True(t, "turn done", func() bool { return h.doneCount() == 1 })

	var deltas []string
	var final bus.Outbound
	for _, m := range h.out.all() {
		switch m.Kind {
		case bus.KindDelta:
			deltas = append(deltas, m.Content)
		case bus.KindStreamEnd:
			final = m
		}
	}
	if strings.Join(deltas, "") != "Hello there, friend." || len(deltas) < 2 {
		t.Errorf("deltas %q", deltas)
	}
	if !final.Final || final.Content != "Hello there, friend." || final.ChatID != "c1" || final.Channel != "test" {
		t.Errorf("final %+v", final)
	}

	// Runtime context was sent but is not stored.
	req := llm.reqs()[0]
	if req.Messages[0].Role != "system" || !strings.Contains(req.Messages[0].Content, "You are nanobot") {
		t.Errorf("system prompt: %q", req.Messages[0].Content[:min(80, len(req.Messages[0].Content))])
	}
	sent := lastUser(req)
	if !strings.Contains(sent, "[Runtime Context") || !strings.Contains(sent, "Channel: test") || !strings.HasSuffix(sent, "\n\nhi") {
		t.Errorf("sent user message %q", sent)
	}
	s, err := h.store.Load(context.Background(), "test:c1")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Messages) != 2 || s.Messages[0].Content != "hi" || s.Messages[1].Content != "Hello there, friend." {
		t.Fatalf("stored %+v", s.Messages)
	}
	for _, m := range s.Messages {
		if m.Timestamp == "" {
			t.Error("stored message without timestamp")
		}
	}
}

func TestMultiToolTurnRunsToolsConcurrently(t *testing.T) {
	var inFlight, peak atomic.Int32
	slow := toolFunc{name: "slow", fn: func(ctx context.Context, args map[string]any) (tools.Result, error) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		// Wait until both calls are running (or give up after a while).
		deadline := time.Now().Add(2 * time.Second)
		for peak.Load() < 2 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		inFlight.Add(-1)
		return tools.Result{Content: fmt.Sprintf("result-%v", args["n"])}, nil
	}}
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == providers.RoleTool {
			return text("both done")
		}
		return &providers.LLMResponse{ToolCalls: []providers.ToolCallRequest{
			call("a", "slow", map[string]any{"n": 1}), call("b", "slow", map[string]any{"n": 2}),
		}, FinishReason: providers.FinishToolCalls}, nil
	}}
	h := newHarness(t, llm, toolList{slow}, nil)
	h.send("c", "go")
	waitfor.True(t, "turn", func() bool { return h.doneCount() == 1 })
	if peak.Load() != 2 {
		t.Errorf("tool calls ran one at a time (peak %d)", peak.Load())
	}
	reqs := llm.reqs()
	second := reqs[1].Messages
	n := len(second)
	if second[n-2].ToolCallID != "a" || second[n-1].ToolCallID != "b" || second[n-2].Content != "result-1" || second[n-1].Content != "result-2" {
		t.Errorf("tool results out of order: %+v", second[n-2:])
	}
	hints := 0
	for _, m := range h.out.all() {
		if m.Kind == bus.KindToolHint {
			hints++
		}
	}
	if hints != 2 {
		t.Errorf("%d tool hints, want 2", hints)
	}
	s, _ := h.store.Load(context.Background(), "test:c")
	roles := []string{}
	for _, m := range s.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "user,assistant,tool,tool,assistant" {
		t.Errorf("stored roles %v", roles)
	}
}

func TestIterationCapGivesFinalAnswer(t *testing.T) {
	n := 0
	loopy := toolFunc{name: "look", fn: func(context.Context, map[string]any) (tools.Result, error) {
		n++
		return tools.Result{Content: fmt.Sprint("page ", n)}, nil
	}}
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		if req.ToolChoice == "none" {
			return text("Here is what I found so far.")
		}
		return &providers.LLMResponse{ToolCalls: []providers.ToolCallRequest{call(fmt.Sprint(len(req.Messages)), "look", map[string]any{"page": len(req.Messages)})}}, nil
	}}
	h := newHarness(t, llm, toolList{loopy}, nil)
	h.send("c", "research")
	waitfor.True(t, "turn", func() bool { return h.doneCount() == 1 })
	reqs := llm.reqs()
	if len(reqs) != 6 {
		t.Errorf("%d LLM calls, want 5 with tools + 1 final", len(reqs))
	}
	last := reqs[len(reqs)-1]
	if last.ToolChoice != "none" || len(last.Tools) == 0 {
		t.Errorf("final call: tool choice %q, %d tools (definitions must stay for providers that need them)", last.ToolChoice, len(last.Tools))
	}
	if got := h.out.finals()["test:c"]; len(got) != 1 || got[0] != "Here is what I found so far." {
		t.Errorf("finals %v", got)
	}
	// The wrap-up instruction is not stored.
	s, _ := h.store.Load(context.Background(), "test:c")
	for _, m := range s.Messages {
		if strings.Contains(m.Text(), "[System:") {
			t.Error("wrap-up instruction stored in the session")
		}
	}
}

// A refusal (the owner said no) tells the model not to try another way;
// "try a different approach" after it would say the opposite.
func TestRefusalGetsNoRetryHint(t *testing.T) {
	refusing := toolFunc{name: "exec", fn: func(context.Context, map[string]any) (tools.Result, error) {
		return tools.Result{}, tools.Refused("not run: the owner denied this command. Do not retry it")
	}}
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		if len(req.Messages) > 0 && req.Messages[len(req.Messages)-1].Role == providers.RoleTool {
			return text("The owner said no.")
		}
		return &providers.LLMResponse{ToolCalls: []providers.ToolCallRequest{call("1", "exec", map[string]any{"command": "x"})}}, nil
	}}
	h := newHarness(t, llm, toolList{refusing}, nil)
	h.send("c", "run it")
	waitfor.True(t, "turn", func() bool { return h.doneCount() == 1 })
	tm := llm.reqs()[1].Messages[len(llm.reqs()[1].Messages)-1]
	if !strings.Contains(tm.Content, "the owner denied") || strings.Contains(tm.Content, RetryHint) {
		t.Errorf("the model read %q", tm.Content)
	}
}

func TestErrorHintAndCircuitBreaker(t *testing.T) {
	failing := toolFunc{name: "fetch", fn: func(context.Context, map[string]any) (tools.Result, error) {
		return tools.Result{}, errors.New("connection refused")
	}}
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		if req.ToolChoice == "none" {
			return text("The site is down; I could not fetch it.")
		}
		return &providers.LLMResponse{ToolCalls: []providers.ToolCallRequest{call(fmt.Sprint(len(req.Messages)), "fetch", map[string]any{"url": "http://x"})}}, nil
	}}
	h := newHarness(t, llm, toolList{failing}, func(c *LoopConfig) { c.Runner.MaxIterations = 40 })
	h.send("c", "fetch it")
	waitfor.True(t, "turn", func() bool { return h.doneCount() == 1 })
	reqs := llm.reqs()
	if len(reqs) != 4 {
		t.Fatalf("%d LLM calls, want 3 failing attempts + 1 final (breaker at 3)", len(reqs))
	}
	tm := reqs[1].Messages[len(reqs[1].Messages)-1]
	if tm.Role != "tool" || !strings.Contains(tm.Content, "connection refused") || !strings.HasSuffix(tm.Content, RetryHint) {
		t.Errorf("tool error message %q", tm.Content)
	}
	if !strings.Contains(lastUser(reqs[3]), "failed 3 times") {
		t.Errorf("final call does not explain the breaker: %q", lastUser(reqs[3]))
	}
	if got := h.out.finals()["test:c"]; len(got) != 1 || !strings.Contains(got[0], "site is down") {
		t.Errorf("finals %v", got)
	}
}

// A person's /stop and a typed Stop (an API client that went away) both
// cancel the running turn and what is queued behind it.
func TestStopCancelsRunningTurn(t *testing.T) {
	for name, stop := range map[string]func(h *harness){
		"text": func(h *harness) { h.send("c", "/stop") },
		"typed": func(h *harness) {
			h.loop.Submit(context.Background(), bus.Inbound{Channel: "test", ChatID: "c", SenderID: "api", Stop: true, MessageID: "s1"})
		},
	} {
		t.Run(name, func(t *testing.T) {
			started := make(chan struct{})
			var once sync.Once
			llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("ok") }}
			blocking := &ctxLLM{fakeLLM: llm, started: started, once: &once}
			h := newHarness(t, llm, nil, func(c *LoopConfig) { c.Runner.Provider = blocking })
			h.send("c", "slow")
			select {
			case <-started:
			case <-time.After(5 * time.Second):
				t.Fatal("turn did not start")
			}
			h.send("c", "queued behind")
			stop(h)
			waitfor.True(t, "stopped turns done", func() bool { return h.doneCount() == 3 })
			finals := h.out.finals()["test:c"]
			if len(finals) != 1 || finals[0] != "Stopped." {
				t.Errorf("finals %v", finals)
			}
			waitfor.True(t, "idle", h.loop.Idle)
			// The session stays usable.
			h.send("c", "fast")
			waitfor.True(t, "next turn", func() bool { return h.doneCount() == 4 })
			if got := h.out.finals()["test:c"]; got[len(got)-1] != "ok" {
				t.Errorf("after stop: %v", got)
			}
		})
	}
}

// ctxLLM blocks on "slow" until its context ends.
type ctxLLM struct {
	*fakeLLM
	started chan struct{}
	once    *sync.Once
}

func (c *ctxLLM) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	if strings.HasSuffix(lastUser(req), "slow") {
		c.once.Do(func() { close(c.started) })
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return c.fakeLLM.Stream(ctx, req, onDelta)
}

func TestSessionsInParallelFIFOWithin(t *testing.T) {
	release := make(chan struct{})
	llm := &fakeLLM{}
	llm.reply = func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		u := lastUser(req)
		body := u[strings.LastIndex(u, "\n")+1:]
		if strings.HasPrefix(body, "slow") {
			<-release
		}
		return text("re:" + body)
	}
	h := newHarness(t, llm, nil, nil)
	h.send("slowchat", "slow")
	// While slowchat waits, another chat gets answered.
	h.send("fast", "quick")
	waitfor.True(t, "fast chat answered while the slow one waits", func() bool {
		return len(h.out.finals()["test:fast"]) == 1
	})
	close(release)
	// Many messages to one chat arrive concurrently-ish; they are answered in order.
	for i := range 20 {
		h.send("fifo", fmt.Sprint("m", i))
	}
	waitfor.True(t, "fifo done", func() bool { return len(h.out.finals()["test:fifo"]) == 20 })
	got := h.out.finals()["test:fifo"]
	for i, g := range got {
		if g != fmt.Sprint("re:m", i) {
			t.Fatalf("reply %d = %q: order broken (%v)", i, g, got)
		}
	}
}

func TestConcurrencyCap(t *testing.T) {
	var inFlight, peak atomic.Int32
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) {
		n := inFlight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		inFlight.Add(-1)
		return text("ok")
	}}
	h := newHarness(t, llm, nil, func(c *LoopConfig) { c.MaxConcurrentTurns = 3 })
	for i := range 12 {
		h.send(fmt.Sprint("chat", i), "hi")
	}
	waitfor.True(t, "all answered", func() bool { return h.doneCount() == 12 })
	if p := peak.Load(); p > 3 || p < 2 {
		t.Errorf("peak concurrent turns %d, want at most 3 (and some parallelism)", p)
	}
}

func TestSlashCommands(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("answer") }}
	h := newHarness(t, llm, nil, nil)
	h.send("c", "hello")
	waitfor.True(t, "turn", func() bool { return h.doneCount() == 1 })
	h.send("c", "/status")
	h.send("c", "/help@nanobot_bot")
	h.send("c", "/new")
	waitfor.True(t, "commands", func() bool { return h.doneCount() == 4 })
	if len(llm.reqs()) != 1 {
		t.Errorf("commands reached the LLM: %d calls", len(llm.reqs()))
	}
	f := h.out.finals()["test:c"]
	if !strings.Contains(f[1], "Model: test-model") || !strings.Contains(f[1], "2 messages") || !strings.Contains(f[1], "of 10000 tokens") {
		t.Errorf("/status = %q", f[1])
	}
	if !strings.Contains(f[2], "/new") || !strings.Contains(f[2], "/stop") {
		t.Errorf("/help = %q", f[2])
	}
	if f[3] != "New conversation started." {
		t.Errorf("/new = %q", f[3])
	}
	s, _ := h.store.Load(context.Background(), "test:c")
	if len(s.Messages) != 0 {
		t.Errorf("after /new the session has %d messages", len(s.Messages))
	}
	files, _ := filepath.Glob(filepath.Join(h.ws, "sessions", "*"))
	if len(files) < 2 {
		t.Errorf("/new did not keep the archived conversation: %v", files)
	}
	// Unknown commands go to the LLM as text.
	h.send("c", "/weather Berlin")
	waitfor.True(t, "unknown command", func() bool { return h.doneCount() == 5 })
	if len(llm.reqs()) != 2 {
		t.Error("unknown slash command did not reach the LLM")
	}
}

func TestPromptPrefixIsStable(t *testing.T) {
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		if len(req.Messages)%4 == 2 { // every other turn uses a tool
			return &providers.LLMResponse{ToolCalls: []providers.ToolCallRequest{call(fmt.Sprint(len(req.Messages)), "echo", map[string]any{"x": len(req.Messages)})}}, nil
		}
		return text(fmt.Sprint("reply after ", len(req.Messages), " messages"))
	}}
	echo := toolFunc{name: "echo", fn: func(_ context.Context, a map[string]any) (tools.Result, error) {
		return tools.Result{Content: fmt.Sprint(a["x"])}, nil
	}}
	h := newHarness(t, llm, toolList{echo}, nil)
	for i := range 10 {
		h.send("c", fmt.Sprint("turn ", i))
		waitfor.True(t, "turn", func() bool { return h.doneCount() == i+1 })
	}
	// First request of each turn: system + history + new user message.
	var firsts []providers.ChatRequest
	for _, r := range llm.reqs() {
		if r.Messages[len(r.Messages)-1].Role == providers.RoleUser {
			firsts = append(firsts, r)
		}
	}
	if len(firsts) != 10 {
		t.Fatalf("%d turn-opening requests", len(firsts))
	}
	enc := func(msgs []providers.Message) string {
		b, _ := json.Marshal(msgs)
		return string(b)
	}
	for i := 1; i < len(firsts); i++ {
		prev := firsts[i-1].Messages
		cur := firsts[i].Messages
		// Everything but the previous turn's user message (which carries the
		// runtime context) must be a byte-identical prefix.
		if enc(prev[:len(prev)-1]) != enc(cur[:len(prev)-1]) {
			t.Fatalf("turn %d: request prefix changed", i)
		}
	}
}

func TestImagesInUserMessage(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "cat.png")
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	if err := os.WriteFile(img, png, 0o600); err != nil {
		t.Fatal(err)
	}
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("a cat") }}
	h := newHarness(t, llm, nil, nil)
	h.loop.Submit(context.Background(), bus.Inbound{Channel: "test", ChatID: "c", SenderID: "u", Content: "what is this?", Media: []bus.Media{{Path: img, MIMEType: "image/png"}}})
	waitfor.True(t, "turn", func() bool { return h.doneCount() == 1 })
	um := llm.reqs()[0].Messages[len(llm.reqs()[0].Messages)-1]
	if !um.HasImages() || !strings.HasPrefix(um.Parts[1].ImageURL.URL, "data:image/png;base64,") {
		t.Errorf("user message parts %+v", um.Parts)
	}
	s, _ := h.store.Load(context.Background(), "test:c")
	if s.Messages[0].HasImages() || !strings.Contains(s.Messages[0].Content, "cat.png") || strings.Contains(s.Messages[0].Content, "Runtime Context") {
		t.Errorf("stored user message %+v", s.Messages[0])
	}
}

func TestProviderErrorTellsUser(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) {
		return nil, &providers.Error{Provider: "openrouter", StatusCode: 401, Message: "invalid key"}
	}}
	h := newHarness(t, llm, nil, nil)
	h.send("c", "hi")
	waitfor.True(t, "turn", func() bool { return h.doneCount() == 1 })
	var final bus.Outbound
	for _, m := range h.out.all() {
		if m.Final {
			final = m
		}
	}
	if !final.IsError || !strings.Contains(final.Content, "rejected the API key") {
		t.Errorf("final %+v", final)
	}
}

func TestToolResultTruncatedWhenStored(t *testing.T) {
	big := strings.Repeat("x", 5000) + "TAIL"
	dump := toolFunc{name: "dump", fn: func(context.Context, map[string]any) (tools.Result, error) { return tools.Result{Content: big}, nil }}
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		if req.Messages[len(req.Messages)-1].Role == providers.RoleTool {
			if req.Messages[len(req.Messages)-1].Content != big {
				return text("model did not see the full result")
			}
			return text("done")
		}
		return &providers.LLMResponse{ToolCalls: []providers.ToolCallRequest{call("1", "dump", nil)}}, nil
	}}
	h := newHarness(t, llm, toolList{dump}, func(c *LoopConfig) { c.MaxToolResultChars = 1000 })
	h.send("c", "dump")
	waitfor.True(t, "turn", func() bool { return h.doneCount() == 1 })
	s, _ := h.store.Load(context.Background(), "test:c")
	tm := s.Messages[2]
	if len([]rune(tm.Content)) > 1100 || !strings.Contains(tm.Content, "characters cut") || !strings.HasSuffix(tm.Content, "TAIL") {
		t.Errorf("stored tool result (%d chars): %q…", len(tm.Content), tm.Content[:60])
	}
	if f := h.out.finals()["test:c"]; f[0] != "done" {
		t.Errorf("final %q", f[0])
	}
}

func TestBackgroundRunsSpeakOnlyWithNews(t *testing.T) {
	// The silent answers models actually give, beside the bare token.
	silent := []string{bus.SilentReply, "HEARTBEAT_OK.", "**HEARTBEAT_OK**", "HEARTBEAT_OK – nothing due", "Nothing to report. HEARTBEAT_OK"}
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		u := lastUser(req)
		for i, s := range silent {
			if strings.Contains(u, fmt.Sprintf("nothing due %d", i)) {
				return text(s)
			}
		}
		return text("Good morning! It is sunny.")
	}}
	h := newHarness(t, llm, nil, nil)
	var bodies []string
	for i := range silent {
		bodies = append(bodies, fmt.Sprintf("nothing due %d", i))
	}
	bodies = append(bodies, "weather due")
	for i, body := range bodies {
		h.loop.Submit(context.Background(), bus.Inbound{Channel: "test", ChatID: "c", SenderID: "heartbeat", SessionKey: "heartbeat",
			Content: "[Heartbeat] " + body, Source: bus.SourceHeartbeat, Background: true, MaxHistory: 2})
		waitfor.True(t, "beat", func() bool { return h.doneCount() == i+1 })
	}
	var delivered []string
	for _, m := range h.out.all() {
		if m.Kind == bus.KindDelta || m.Kind == bus.KindTyping || m.Kind == bus.KindToolHint {
			t.Errorf("background run streamed %s", m.Kind)
		}
		if m.Final {
			delivered = append(delivered, m.Content)
		}
	}
	if len(delivered) != 1 || delivered[0] != "Good morning! It is sunny." {
		t.Errorf("delivered %v, want only the news", delivered)
	}
	if n := len(llm.reqs()[len(bodies)-1].Messages); n != 4 { // system + 2 history + user
		t.Errorf("second beat sent %d messages, want the short history of 2", n)
	}
	if _, _, ok := h.loop.LastActive(); ok {
		t.Error("a heartbeat counted as user activity")
	}
}

// A message delivered again after a crash that came after its turn was
// saved (but before it was acknowledged) is answered from the session: no
// second model call, no second copy of the turn on disk.
func TestRedeliveredMessageIsAnsweredFromTheSession(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("Forty-two.") }}
	h := newHarness(t, llm, nil, nil)
	m := bus.Inbound{Channel: "test", ChatID: "c1", SenderID: "u", Content: "the answer?", MessageID: "m-1"}
	h.loop.Submit(context.Background(), m)
	waitfor.True(t, "the first turn", func() bool { return h.doneCount() == 1 })
	h.loop.Submit(context.Background(), m) // the platform (or the journal) delivers it again
	waitfor.True(t, "the redelivery", func() bool { return h.doneCount() == 2 })
	if n := len(llm.reqs()); n != 1 {
		t.Errorf("%d model calls, want 1", n)
	}
	if got := h.out.finals()["test:c1"]; len(got) != 2 || got[1] != "Forty-two." {
		t.Errorf("final replies %q, want the stored answer sent again", got)
	}
	sess, err := h.store.Load(context.Background(), "test:c1")
	if err != nil {
		t.Fatal(err)
	}
	if n := sess.Len(); n != 2 {
		t.Errorf("session holds %d messages, want the turn once (user + assistant)", n)
	}
	// A new message with another id is a new turn.
	m.MessageID, m.Content = "m-2", "and again?"
	h.loop.Submit(context.Background(), m)
	waitfor.True(t, "a new turn", func() bool { return h.doneCount() == 3 })
	if n := len(llm.reqs()); n != 2 {
		t.Errorf("%d model calls after a new message, want 2", n)
	}
}

// A turn interrupted before its answer (the gateway stopped mid-turn; its
// user message and a tool call were saved) is run again when the message
// is delivered again: the model sees the question once, and the session
// holds the user message once, followed by what both runs produced.
func TestInterruptedTurnRunsAgainWithoutASecondUserMessage(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("Forty-two.") }}
	h := newHarness(t, llm, nil, nil)
	ctx := context.Background()
	sess, err := h.store.Load(ctx, "test:c1")
	if err != nil {
		t.Fatal(err)
	}
	earlier := []providers.Message{
		{Role: providers.RoleUser, Content: "hello"},
		{Role: providers.RoleAssistant, Content: "Hi."},
		{Role: providers.RoleUser, Content: "the answer?", InboundID: "test/c1/m-1"},
	}
	if err := h.store.Append(ctx, sess, earlier...); err != nil {
		t.Fatal(err)
	}
	h.loop.Submit(ctx, bus.Inbound{Channel: "test", ChatID: "c1", SenderID: "u", Content: "the answer?", MessageID: "m-1"})
	waitfor.True(t, "the turn", func() bool { return h.doneCount() == 1 })
	reqs := llm.reqs()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls, want 1", len(reqs))
	}
	asked := 0
	for _, m := range reqs[0].Messages {
		if m.Role == providers.RoleUser && strings.Contains(m.Text(), "the answer?") {
			asked++
		}
	}
	if asked != 1 {
		t.Errorf("the question is in the request %d times, want once", asked)
	}
	if got := h.out.finals()["test:c1"]; len(got) != 1 || got[0] != "Forty-two." {
		t.Errorf("finals %q", got)
	}
	sess, err = h.store.Load(ctx, "test:c1")
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range sess.Messages {
		roles = append(roles, string(m.Role)+":"+m.Text())
	}
	want := []string{"user:hello", "assistant:Hi.", "user:the answer?", "assistant:Forty-two."}
	if strings.Join(roles, "|") != strings.Join(want, "|") {
		t.Errorf("session %q\nwant %q", roles, want)
	}
}

// What the loop remembers per chat lasts while the chat has a worker: after
// many chats spoke once and went quiet, nothing of them is left.
func TestLoopForgetsQuietChats(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("ok") }}
	h := newHarness(t, llm, nil, nil)
	const chats = 200
	for i := range chats {
		h.send(fmt.Sprint("c", i), "hello")
	}
	waitfor.True(t, "every chat answered and its worker gone", func() bool { return h.doneCount() == chats && h.loop.Idle() })
	h.loop.mu.Lock()
	defer h.loop.mu.Unlock()
	if n, q := len(h.loop.workers), len(h.loop.queueChoices); n != 0 || q != 0 {
		t.Errorf("after %d quiet chats: %d workers, %d remembered queue choices; want 0 and 0", chats, n, q)
	}
}

// OnTurnDone may block (journal compaction; in a cluster, an acknowledgement
// retried for up to 30 s): the callbacks of what a /stop cancels hold up
// neither that /stop's Submit nor another session's.
func TestBlockedTurnDoneHoldsUpNoSubmit(t *testing.T) {
	started := make(chan struct{})
	var once sync.Once
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("ok") }}
	blocking := &ctxLLM{fakeLLM: llm, started: started, once: &once}
	blocked, release := make(chan struct{}), make(chan struct{})
	var blockOnce, releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })
	h := newHarness(t, llm, nil, func(c *LoopConfig) { c.Runner.Provider = blocking })
	record := h.loop.cfg.OnTurnDone
	h.loop.cfg.OnTurnDone = func(m bus.Inbound, err error) {
		if m.Key() == "test:a" && errors.Is(err, context.Canceled) {
			blockOnce.Do(func() { close(blocked) })
			<-release
		}
		record(m, err)
	}
	h.send("a", "slow")
	<-started
	h.send("a", "queued behind")
	stopped := make(chan struct{})
	go func() { h.send("a", "/stop"); close(stopped) }()
	<-blocked
	submitted := make(chan struct{})
	go func() { h.send("b", "hello"); close(submitted) }()
	for _, c := range []struct {
		what string
		done chan struct{}
	}{{"another session's Submit", submitted}, {"the /stop's Submit", stopped}} {
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s waited for a blocked turn-done callback", c.what)
		}
	}
	releaseOnce.Do(func() { close(release) })
	waitfor.True(t, "every message done", func() bool { return h.doneCount() == 4 })
	waitfor.True(t, "idle", h.loop.Idle)
}

// compactor is a Consolidator that records /compact.
type compactor struct {
	archiveRecorder
	keep []int
	fold int
}

func (c *compactor) Compact(_ context.Context, s *session.Session, keep int) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keep = append(c.keep, keep)
	return c.fold, nil
}

// TestCompactCommand: /compact folds the chat's conversation without the
// model answering, keeps the last exchanges, and says what it did.
func TestCompactCommand(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("answer") }}
	comp := &compactor{fold: 6, archiveRecorder: archiveRecorder{archived: map[string]int{}}}
	h := newHarness(t, llm, nil, func(c *LoopConfig) { c.Consolidator = comp })
	h.send("c", "hello")
	waitfor.True(t, "turn", func() bool { return h.doneCount() == 1 })
	h.send("c", "/compact")
	waitfor.True(t, "compact", func() bool { return h.doneCount() == 2 })
	comp.mu.Lock()
	comp.fold = 0
	comp.mu.Unlock()
	h.send("c", "/compact")
	waitfor.True(t, "second compact", func() bool { return h.doneCount() == 3 })
	if len(llm.reqs()) != 1 {
		t.Errorf("/compact reached the model as a message: %d calls", len(llm.reqs()))
	}
	f := h.out.finals()["test:c"]
	if !strings.HasPrefix(f[1], "Compacted: 6 messages folded into memory") || !strings.HasPrefix(f[2], "Nothing to compact") {
		t.Errorf("replies %q", f[1:])
	}
	comp.mu.Lock()
	defer comp.mu.Unlock()
	if len(comp.keep) != 2 || comp.keep[0] != compactKeep {
		t.Errorf("Compact called with keep %v", comp.keep)
	}
}

// TestHelpShowsAdminCommandsToAdminsOnly: /help lists /pairing, /dream
// and /restart to an admin and not to anyone else, /new to both.
func TestHelpShowsAdminCommandsToAdminsOnly(t *testing.T) {
	h := newHarness(t, &fakeLLM{}, nil, nil)
	h.loop.Submit(context.Background(), bus.Inbound{Channel: "test", ChatID: "admin", SenderID: "boss", Content: "/help", MessageID: "1", Admin: true})
	h.send("guest", "/help")
	waitfor.True(t, "both helps", func() bool { return h.doneCount() == 2 })
	f := h.out.finals()
	for _, cmd := range []string{"/pairing", "/dream ", "/restart", "/goal"} {
		if !strings.Contains(f["test:admin"][0], cmd) || strings.Contains(f["test:guest"][0], cmd) {
			t.Errorf("%s: admin help:\n%s\nguest help:\n%s", cmd, f["test:admin"][0], f["test:guest"][0])
		}
	}
	if !strings.Contains(f["test:guest"][0], "/new") {
		t.Errorf("guest help lacks /new:\n%s", f["test:guest"][0])
	}
}
