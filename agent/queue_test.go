package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// roleTexts renders messages as "role:text" with the runtime context
// stripped, for comparing what the model saw with what was stored.
func roleTexts(msgs []providers.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == providers.RoleSystem {
			continue
		}
		s := string(m.Role) + ":" + StripRuntimeContext(m.Text())
		for _, tc := range m.ToolCalls {
			s += " call " + tc.Function.Name
		}
		out = append(out, s)
	}
	return out
}

func queueMode(mode string) func(*LoopConfig) {
	return func(c *LoopConfig) { c.Queue = configs.QueueConfig{Mode: mode, CollectMs: 400} }
}

// Steer: a message written while a tool runs reaches the model at its next
// call, after the tool result, and the session stores the turn in the
// order the model saw it; both messages are done when the turn is.
func TestSteerInjectsAfterToolResult(t *testing.T) {
	toolStarted, releaseTool := make(chan struct{}), make(chan struct{})
	slow := toolFunc{name: "lookup", fn: func(ctx context.Context, _ map[string]any) (tools.Result, error) {
		close(toolStarted)
		<-releaseTool
		return tools.Result{Content: "22 degrees"}, nil
	}}
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		if len(req.Messages) == 2 { // system + the first question
			return &providers.LLMResponse{ToolCalls: []providers.ToolCallRequest{call("c1", "lookup", map[string]any{"query": "weather"})}}, nil
		}
		return text("72 degrees Fahrenheit.")
	}}
	var doneAt []int // final replies published when each message was done
	var h *harness
	h = newHarness(t, llm, toolList{slow}, func(c *LoopConfig) {
		queueMode(configs.QueueSteer)(c)
		c.OnTurnDone = func(m bus.Inbound, _ error) {
			h.mu.Lock()
			h.done = append(h.done, m)
			doneAt = append(doneAt, len(h.out.finals()["test:c"]))
			h.mu.Unlock()
		}
	})
	h.send("c", "what is the weather?")
	<-toolStarted
	h.send("c", "in fahrenheit please")
	waitfor.True(t, "the second message parked for the running turn", func() bool {
		h.loop.mu.Lock()
		defer h.loop.mu.Unlock()
		w := h.loop.workers["test:c"]
		return w != nil && len(w.steered) == 1
	})
	close(releaseTool)
	waitfor.True(t, "both messages done", func() bool { return h.doneCount() == 2 })

	reqs := llm.reqs()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2 (the tool call and the answer)", len(reqs))
	}
	saw := roleTexts(reqs[1].Messages)
	want := []string{"user:what is the weather?", "assistant: call lookup", "tool:22 degrees", "user:in fahrenheit please"}
	if strings.Join(saw, "|") != strings.Join(want, "|") {
		t.Errorf("second request %q\nwant %q", saw, want)
	}
	if got := h.out.finals()["test:c"]; len(got) != 1 || got[0] != "72 degrees Fahrenheit." {
		t.Errorf("final replies %q, want one answer", got)
	}
	h.mu.Lock()
	if len(doneAt) != 2 || doneAt[0] != 1 || doneAt[1] != 1 {
		t.Errorf("final replies seen when each message was done: %v, want [1 1] (done only after the answer)", doneAt)
	}
	h.mu.Unlock()
	sess, err := h.store.Load(context.Background(), "test:c")
	if err != nil {
		t.Fatal(err)
	}
	stored := roleTexts(sess.Messages)
	wantStored := append(want, "assistant:72 degrees Fahrenheit.")
	if strings.Join(stored, "|") != strings.Join(wantStored, "|") {
		t.Errorf("session %q\nwant %q", stored, wantStored)
	}
	// Delivered again after a crash, both are recognised as answered.
	for _, m := range h.done {
		if reply, ok := answered(sess.Messages, inboundID(m)); !ok || reply != "72 degrees Fahrenheit." {
			t.Errorf("message %q after a restart: answered %v with %q", m.Content, ok, reply)
		}
	}
}

// Steer: a message written while the final answer is being produced (no
// more model calls in this turn) becomes the next turn.
func TestSteerDuringFinalAnswerIsNextTurn(t *testing.T) {
	answering, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		if strings.HasSuffix(lastUser(req), "first") {
			once.Do(func() { close(answering) })
			<-release
		}
		return text("re:" + lastUser(req)[strings.LastIndex(lastUser(req), "\n")+1:])
	}}
	h := newHarness(t, llm, nil, queueMode(configs.QueueSteer))
	h.send("c", "first")
	<-answering
	h.send("c", "second")
	waitfor.True(t, "the second message parked", func() bool {
		h.loop.mu.Lock()
		defer h.loop.mu.Unlock()
		return len(h.loop.workers["test:c"].steered) == 1
	})
	close(release)
	waitfor.True(t, "both answered", func() bool { return h.doneCount() == 2 })
	if got := h.out.finals()["test:c"]; strings.Join(got, "|") != "re:first|re:second" {
		t.Errorf("final replies %q, want one per message in order", got)
	}
}

// Collect: three messages inside the window make one provider call whose
// user message holds all three, and all three are done with it.
func TestCollectMergesBurst(t *testing.T) {
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) { return text("one answer") }}
	h := newHarness(t, llm, nil, queueMode(configs.QueueCollect))
	for _, s := range []string{"hi", "can you", "check the logs?"} {
		h.send("g", s)
	}
	waitfor.True(t, "the burst done", func() bool { return h.doneCount() == 3 })
	reqs := llm.reqs()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls, want 1", len(reqs))
	}
	if got := StripRuntimeContext(lastUser(reqs[0])); got != "hi\ncan you\ncheck the logs?" {
		t.Errorf("user message %q, want the three lines in order", got)
	}
	if got := h.out.finals()["test:g"]; len(got) != 1 {
		t.Errorf("final replies %q, want one", got)
	}
	sess, err := h.store.Load(context.Background(), "test:g")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range h.done {
		if _, ok := answered(sess.Messages, inboundID(m)); !ok {
			t.Errorf("message %q is not recognised as answered after a restart", m.Content)
		}
	}
	// A message after the pause is a turn of its own.
	h.send("g", "thanks")
	waitfor.True(t, "the next burst", func() bool { return h.doneCount() == 4 })
	if n := len(llm.reqs()); n != 2 {
		t.Errorf("%d model calls, want 2", n)
	}
}

// Interrupt: the running turn is cancelled (its provider call sees the
// cancellation) and the next call holds both user messages; both are
// answered by one reply, nothing says "Stopped".
func TestInterruptCancelsAndAnswersBoth(t *testing.T) {
	started, cancelled := make(chan struct{}), make(chan struct{})
	llm := &fakeLLM{}
	llm.reply = func(req providers.ChatRequest) (*providers.LLMResponse, error) { return text("both handled") }
	blocking := &cancelLLM{fakeLLM: llm, started: started, cancelled: cancelled}
	h := newHarness(t, llm, nil, func(c *LoopConfig) {
		queueMode(configs.QueueInterrupt)(c)
		c.Runner.Provider = blocking
	})
	h.send("c", "write a long essay, slow")
	<-started
	h.send("c", "actually make it a haiku")
	waitfor.True(t, "both done", func() bool { return h.doneCount() == 2 })
	select {
	case <-cancelled:
	default:
		t.Fatal("the first provider call did not see its context cancelled")
	}
	reqs := llm.reqs()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	var users []string
	for _, m := range reqs[1].Messages {
		if m.Role == providers.RoleUser {
			users = append(users, StripRuntimeContext(m.Text()))
		}
	}
	if strings.Join(users, "|") != "write a long essay, slow|actually make it a haiku" {
		t.Errorf("user messages of the second call %q, want both", users)
	}
	if got := h.out.finals()["test:c"]; len(got) != 1 || got[0] != "both handled" {
		t.Errorf("final replies %q, want one answer", got)
	}
	sess, err := h.store.Load(context.Background(), "test:c")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range h.done {
		if _, ok := answered(sess.Messages, inboundID(m)); !ok {
			t.Errorf("message %q is not recognised as answered after a restart", m.Content)
		}
	}
}

// cancelLLM blocks a request whose last user message ends in "slow" until
// its context ends, and reports the cancellation.
type cancelLLM struct {
	*fakeLLM
	started, cancelled chan struct{}
}

func (c *cancelLLM) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	if strings.HasSuffix(lastUser(req), "slow") {
		c.fakeLLM.mu.Lock()
		c.fakeLLM.requests = append(c.fakeLLM.requests, req)
		c.fakeLLM.mu.Unlock()
		close(c.started)
		<-ctx.Done()
		close(c.cancelled)
		return nil, ctx.Err()
	}
	return c.fakeLLM.Stream(ctx, req, onDelta)
}

// /queue sets the chat's mode in the session, so it survives a restart,
// and wins over the configured mode.
func TestQueueCommandPersists(t *testing.T) {
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) { return text("ok") }}
	h := newHarness(t, llm, nil, nil)
	h.send("c", "/queue collect")
	waitfor.True(t, "the command", func() bool { return h.doneCount() == 1 })
	sess, err := h.store.Load(context.Background(), "test:c")
	if err != nil {
		t.Fatal(err)
	}
	if got := sess.Metadata[MetaQueueMode]; got != configs.QueueCollect {
		t.Fatalf("session metadata %s = %v, want collect", MetaQueueMode, got)
	}
	h.send("c", "/queue sideways")
	h.send("c", "/queue")
	waitfor.True(t, "the commands", func() bool { return h.doneCount() == 3 })
	got := h.out.finals()["test:c"]
	if !strings.Contains(got[1], `Unknown queue mode "sideways"`) || !strings.HasPrefix(got[2], "Queue mode: collect (chosen with /queue)") {
		t.Errorf("replies %q", got)
	}
	// A fresh loop on the same store (a restart) collects this chat.
	h2 := newHarness(t, llm, nil, nil)
	h2.loop.cfg.Store, h2.store = h.store, h.store
	h2.loop.cfg.Queue.CollectMs = 300
	h2.send("c", "one")
	h2.send("c", "two")
	waitfor.True(t, "the burst", func() bool { return h2.doneCount() == 2 })
	if n := len(llm.reqs()); n != 1 {
		t.Errorf("%d model calls after the restart, want 1 (collected)", n)
	}
}

// A queued message of a chat reads the chat's /queue choice while the
// running turn writes the session's metadata (the shared *Session of the
// store): the read takes the session's lock. -race catches a bare read.
func TestQueueChoiceReadDuringMetadataWrite(t *testing.T) {
	h := newHarness(t, &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("ok") }}, nil, nil)
	ctx := context.Background()
	sess, err := h.store.Load(ctx, "test:c")
	if err != nil {
		t.Fatal(err)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		<-start
		for i := range 20 {
			if err := h.store.SetMetadata(ctx, sess, "n", i); err != nil {
				t.Error(err)
				return
			}
		}
		if err := h.store.SetMetadata(ctx, sess, MetaQueueMode, configs.QueueCollect); err != nil {
			t.Error(err)
		}
	})
	wg.Go(func() {
		<-start
		for range 200 {
			h.loop.rememberQueueChoice(sess)
		}
	})
	close(start)
	wg.Wait()
	if got := h.loop.rememberQueueChoice(sess); got != configs.QueueCollect {
		t.Errorf("choice %q after the writes, want collect", got)
	}
}

func TestQueueModeResolution(t *testing.T) {
	l := NewLoop(LoopConfig{Queue: configs.DefaultQueue()})
	tests := []struct {
		choice string
		m      bus.Inbound
		want   string
	}{
		{"", bus.Inbound{}, configs.QueueSteer},
		{"", bus.Inbound{IsGroup: true}, configs.QueueCollect},
		{"", bus.Inbound{IsGroup: true, QueueMode: configs.QueueFIFO}, configs.QueueFIFO},
		{configs.QueueInterrupt, bus.Inbound{IsGroup: true, QueueMode: configs.QueueFIFO}, configs.QueueInterrupt},
		{"bogus", bus.Inbound{}, configs.QueueSteer},
	}
	for _, tt := range tests {
		if got := l.queueMode(tt.choice, tt.m); got != tt.want {
			t.Errorf("queueMode(%q, group=%v binding=%q) = %q, want %q", tt.choice, tt.m.IsGroup, tt.m.QueueMode, got, tt.want)
		}
	}
	if got := NewLoop(LoopConfig{}).queueMode("", bus.Inbound{IsGroup: true}); got != configs.QueueFIFO {
		t.Errorf("zero config: %q, want queue", got)
	}
}

// Steer: a message that arrives while an older one (here a command) waits
// behind the running turn is not steered past it: the chat's messages are
// answered in order.
func TestSteerKeepsOrderBehindQueued(t *testing.T) {
	answering, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		u := StripRuntimeContext(lastUser(req))
		if u == "first" {
			once.Do(func() { close(answering) })
			<-release
		}
		return text("re:" + u)
	}}
	h := newHarness(t, llm, nil, queueMode(configs.QueueSteer))
	h.send("c", "first")
	<-answering
	h.send("c", "/help")
	h.send("c", "third")
	close(release)
	waitfor.True(t, "all three done", func() bool { return h.doneCount() == 3 })
	got := h.out.finals()["test:c"]
	if len(got) != 3 || got[0] != "re:first" || !strings.HasPrefix(got[1], "Commands:") || got[2] != "re:third" {
		t.Errorf("final replies %q, want first, the help, third", got)
	}
}

// Interrupt during a tool run: the tool sees the cancellation, and the next
// request holds both user messages and no tool call without its result.
func TestInterruptDuringToolKeepsHistoryLegal(t *testing.T) {
	toolStarted, toolCancelled := make(chan struct{}), make(chan struct{})
	slow := toolFunc{name: "build", fn: func(ctx context.Context, _ map[string]any) (tools.Result, error) {
		close(toolStarted)
		<-ctx.Done()
		close(toolCancelled)
		return tools.Result{}, ctx.Err()
	}}
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		if len(req.Messages) == 2 {
			return &providers.LLMResponse{ToolCalls: []providers.ToolCallRequest{call("c1", "build", map[string]any{"command": "make"})}}, nil
		}
		return text("stopped the build; what now?")
	}}
	h := newHarness(t, llm, toolList{slow}, queueMode(configs.QueueInterrupt))
	h.send("c", "build the project")
	<-toolStarted
	h.send("c", "no wait, run the tests instead")
	waitfor.True(t, "both done", func() bool { return h.doneCount() == 2 })
	<-toolCancelled
	reqs := llm.reqs()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	saw := roleTexts(reqs[1].Messages)
	want := []string{"user:build the project", "user:no wait, run the tests instead"}
	if strings.Join(saw, "|") != strings.Join(want, "|") {
		t.Errorf("second request %q\nwant %q (the unanswered tool call dropped)", saw, want)
	}
	if got := h.out.finals()["test:c"]; len(got) != 1 {
		t.Errorf("final replies %q, want one", got)
	}
}

// /stop during a collect window drops the burst and says so; nothing runs.
func TestStopDuringCollectReportsTheBurst(t *testing.T) {
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) { return text("late") }}
	h := newHarness(t, llm, nil, func(c *LoopConfig) { c.Queue = configs.QueueConfig{Mode: configs.QueueCollect, CollectMs: 10000} })
	h.send("g", "one")
	h.send("g", "two")
	h.send("g", "/stop")
	waitfor.True(t, "all three done", func() bool { return h.doneCount() == 3 })
	waitfor.True(t, "idle", h.loop.Idle)
	if n := len(llm.reqs()); n != 0 {
		t.Errorf("%d model calls after /stop, want 0", n)
	}
	if got := h.out.finals()["test:g"]; len(got) != 1 || got[0] != "Stopped." {
		t.Errorf("final replies %q, want Stopped.", got)
	}
}

func TestMergeInbound(t *testing.T) {
	a := bus.Inbound{Content: "look at this", MessageID: "1", Media: []bus.Media{{Path: "/tmp/a.png", MIMEType: "image/png"}}}
	b := bus.Inbound{Content: "", MessageID: "2", Media: []bus.Media{{Path: "/tmp/b.pdf", MIMEType: "application/pdf"}}}
	c := bus.Inbound{Content: "and this", MessageID: "3"}
	got := mergeInbound([]bus.Inbound{a, b, c})
	if got.Content != "look at this\nand this" || len(got.Media) != 2 || got.MessageID != "3" {
		t.Errorf("merged %q, %d media, replying to %q; want both texts, both files, the latest message", got.Content, len(got.Media), got.MessageID)
	}
	if !idIn("x/y/1\nx/y/2", "x/y/2") || idIn("x/y/1\nx/y/2", "x/y/") || !idIn("x/y/1", "x/y/1") {
		t.Error("idIn does not match whole ids")
	}
}

// A burst delivered again after a crash whose first message an interrupted
// turn had stored: the model sees that message once, in the history, and
// the session ends up holding every message once and the answer.
func TestMergedReplayWithPartStoredLosesNothing(t *testing.T) {
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) { return text("Answered.") }}
	h := newHarness(t, llm, nil, queueMode(configs.QueueCollect))
	ctx := context.Background()
	sess, err := h.store.Load(ctx, "test:c")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.store.Append(ctx, sess, providers.Message{Role: providers.RoleUser, Content: "first line", InboundID: "test/c/m-1"}); err != nil {
		t.Fatal(err)
	}
	for i, s := range []string{"first line", "second line"} {
		h.loop.Submit(ctx, bus.Inbound{Channel: "test", ChatID: "c", SenderID: "u", Content: s, MessageID: fmt.Sprint("m-", i+1), Replayed: true})
	}
	waitfor.True(t, "both done", func() bool { return h.doneCount() == 2 })
	reqs := llm.reqs()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls, want 1", len(reqs))
	}
	if saw := roleTexts(reqs[0].Messages); strings.Join(saw, "|") != "user:first line|user:second line" {
		t.Errorf("request %q, want each line once", saw)
	}
	sess, err = h.store.Load(ctx, "test:c")
	if err != nil {
		t.Fatal(err)
	}
	if got := roleTexts(sess.Messages); strings.Join(got, "|") != "user:first line|user:second line|assistant:Answered." {
		t.Errorf("session %q", got)
	}
}

// doneErrs records OnTurnDone's error per message content.
func doneErrs(h *harness) func() map[string]error {
	var mu sync.Mutex
	errs := map[string]error{}
	record := h.loop.cfg.OnTurnDone
	h.loop.cfg.OnTurnDone = func(m bus.Inbound, err error) {
		mu.Lock()
		errs[m.ChatID+":"+m.Content] = err
		mu.Unlock()
		record(m, err)
	}
	return func() map[string]error {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(errs)
	}
}

// A session holds at most MaxSessionQueue messages behind its running
// turn: the next is refused, the sender told, and OnTurnDone gets
// ErrQueueFull; other sessions are not affected, and Queued counts what
// waits.
func TestSessionQueueIsBounded(t *testing.T) {
	started := make(chan struct{})
	var once sync.Once
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("ok") }}
	h := newHarness(t, llm, nil, func(c *LoopConfig) {
		c.Runner.Provider = &ctxLLM{fakeLLM: llm, started: started, once: &once}
		c.MaxSessionQueue = 3
	})
	errs := doneErrs(h)
	h.send("a", "slow")
	<-started
	for i := range 5 {
		h.send("a", fmt.Sprint("more ", i))
	}
	if n := h.loop.Queued(); n != 3 {
		t.Errorf("Queued() = %d, want 3", n)
	}
	for _, refused := range []string{"a:more 3", "a:more 4"} {
		if err := errs()[refused]; !errors.Is(err, ErrQueueFull) {
			t.Errorf("%s: OnTurnDone got %v, want ErrQueueFull", refused, err)
		}
	}
	if got := h.out.finals()["test:a"]; len(got) != 2 || !strings.Contains(got[0], "did not take this one") {
		t.Errorf("replies %q, want two refusals", got)
	}
	h.send("b", "hello")
	waitfor.True(t, "the other session answered", func() bool { return len(h.out.finals()["test:b"]) == 1 })
	h.send("a", "/stop")
	waitfor.True(t, "every message done", func() bool { return h.doneCount() == 8 })
	waitfor.True(t, "idle", h.loop.Idle)
	if n := h.loop.Queued(); n != 0 {
		t.Errorf("Queued() = %d when idle, want 0", n)
	}
}

// The loop holds at most MaxQueue messages waiting over all sessions: the
// next, in any session, is refused and its sender told.
func TestLoopQueueIsBounded(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("ok") }}
	h := newHarness(t, llm, nil, func(c *LoopConfig) {
		c.Runner.Provider = &ctxLLM{fakeLLM: llm, started: make(chan struct{}), once: &sync.Once{}}
		c.MaxQueue = 4
	})
	errs := doneErrs(h)
	for i, chat := range []string{"a", "b"} {
		h.send(chat, "slow")
		waitfor.True(t, "the turn of "+chat+" taken from the queue", func() bool { return h.loop.Queued() == 2*i })
		h.send(chat, "q1")
		h.send(chat, "q2")
		if n := h.loop.Queued(); n != 2*(i+1) {
			t.Fatalf("Queued() = %d, want %d", n, 2*(i+1))
		}
	}
	h.send("c", "hello")
	if err := errs()["c:hello"]; !errors.Is(err, ErrQueueFull) {
		t.Errorf("OnTurnDone got %v for a message over the loop's bound, want ErrQueueFull", err)
	}
	if got := h.out.finals()["test:c"]; len(got) != 1 || !strings.Contains(got[0], "too many messages waiting right now") {
		t.Errorf("replies %q, want the refusal", got)
	}
	h.send("a", "/stop")
	h.send("b", "/stop")
	waitfor.True(t, "every message done", func() bool { return h.doneCount() == 9 })
	waitfor.True(t, "idle", h.loop.Idle)
	if n := h.loop.Queued(); n != 0 {
		t.Errorf("Queued() = %d when idle, want 0", n)
	}
}
