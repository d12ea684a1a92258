package agent

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// turnOutput is what the chat got for the turn that ended as the n-th:
// everything published after the first `from` messages, typing left out.
func turnOutput(h *harness, from int) []bus.Outbound {
	var out []bus.Outbound
	for _, m := range h.out.all()[from:] {
		if m.Kind != bus.KindTyping {
			out = append(out, m)
		}
	}
	return out
}

// Once a sender's daily budget is used up their next message gets one
// clear answer (which budget, when it resets) and the provider is not
// called; other senders and exempt admins go on.
func TestBudgetRefusesTheTurnWithOneMessage(t *testing.T) {
	h, srv, led := usageHarness(t)
	h.loop.cfg.Runner.Budgets = usage.NewBudgets(led, usage.Limits{PerSender: usage.Budget{DailyTokens: 1500}, ExemptAdmins: true}, nil)
	go h.loop.Run(t.Context(), nil)
	srv.Handle(func(providertest.Request) providertest.Reply {
		return providertest.Reply{Text: "hello", Usage: &providertest.Usage{PromptTokens: 1000, CompletionTokens: 100}}
	})
	alice := bus.Inbound{Channel: "test", ChatID: "c1", SenderID: "alice", Content: "hi"}
	for range 2 { // 1,100 tokens, then 2,200: the second started under the cap
		if got := h.askFinal(t, alice); got != "hello" {
			t.Fatalf("answer %q, want hello", got)
		}
	}
	calls := len(srv.Requests())
	from := len(h.out.all())
	got := h.askFinal(t, alice)
	want := "You have reached your daily token budget (1,500 tokens). It resets at 00:00 on "
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "(UTC). No model was called for this message.") {
		t.Errorf("answer over budget:\n%q\nwant it to start %q", got, want)
	}
	if out := turnOutput(h, from); len(out) != 1 || out[0].Kind != bus.KindMessage {
		t.Errorf("the refused turn sent %d messages (%+v), want exactly one", len(out), out)
	}
	if n := len(srv.Requests()); n != calls {
		t.Errorf("the provider was called %d more times over budget, want none", n-calls)
	}

	bob := bus.Inbound{Channel: "test", ChatID: "c2", SenderID: "bob", Content: "hi"}
	if got := h.askFinal(t, bob); got != "hello" {
		t.Errorf("another sender: answer %q, want hello", got)
	}
	alice.Admin = true
	if got := h.askFinal(t, alice); got != "hello" {
		t.Errorf("alice as an exempt admin: answer %q, want hello", got)
	}
}

// While the rate limiter holds a call back, the chat sees typing again,
// and then the answer: no error.
func TestRateLimitWaitShowsTyping(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("done") }}
	lim := providers.NewRateLimiters(nil).For("test")
	h := newHarness(t, llm, nil, func(c *LoopConfig) { c.Runner.Provider = lim.Wrap(llm) })
	go h.loop.Run(t.Context(), nil)
	lim.Observe("test-model", http.StatusTooManyRequests, http.Header{"Retry-After-Ms": {"150"}})
	start := time.Now()
	got := h.askFinal(t, bus.Inbound{Channel: "test", ChatID: "c", SenderID: "u", Content: "hi"})
	if got != "done" {
		t.Fatalf("answer %q, want done", got)
	}
	if waited := time.Since(start); waited < 140*time.Millisecond {
		t.Errorf("answered after %v, before the vendor's Retry-After of 150ms", waited)
	}
	typing := 0
	for _, m := range h.out.all() {
		switch {
		case m.Kind == bus.KindTyping:
			typing++
		case m.IsError:
			t.Errorf("the wait showed as an error: %q", m.Content)
		}
	}
	if typing < 2 {
		t.Errorf("typing sent %d times, want the turn's and the wait's (2)", typing)
	}
}
