package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/openai"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// usageHarness runs the loop against a scripted OpenAI-format server, with
// a ledger.
func usageHarness(t *testing.T) (*harness, *providertest.Server, *usage.Ledger) {
	t.Helper()
	srv := providertest.New(t)
	p, err := openai.New(openai.Options{Endpoint: providers.Endpoint{Name: "openai", APIKey: "sk-test", APIBase: srv.OpenAIBase(), HTTPClient: srv.Client()}})
	if err != nil {
		t.Fatal(err)
	}
	led, err := usage.Open(t.Context(), t.TempDir(), usage.Options{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = led.Close() })
	h := newHarness(t, &fakeLLM{}, nil, func(c *LoopConfig) {
		c.Runner.Provider, c.Runner.Model = p, "gpt-4o"
		c.Runner.Ledger, c.Runner.ProviderName = led, "openai"
		c.Usage = led
	})
	return h, srv, led
}

func (h *harness) askFinal(t *testing.T, m bus.Inbound) string {
	t.Helper()
	before := len(h.out.finals()[m.Key()])
	n := h.doneCount()
	m.MessageID = time.Now().Format(time.RFC3339Nano)
	h.loop.Submit(context.Background(), m)
	waitfor.True(t, "the answer to "+m.Content, func() bool { return h.doneCount() > n })
	finals := h.out.finals()[m.Key()]
	if len(finals) <= before {
		t.Fatalf("no answer to %q", m.Content)
	}
	return finals[len(finals)-1]
}

// A turn's provider call lands in the ledger with who, where and what it
// cost, and /usage reports it to the chat.
func TestUsageRecordedAndReported(t *testing.T) {
	h, srv, led := usageHarness(t)
	go h.loop.Run(t.Context(), nil)
	srv.Push(providertest.Reply{Text: "hello", Usage: &providertest.Usage{PromptTokens: 1000, CompletionTokens: 100, CacheReadTokens: 800}})
	user := bus.Inbound{Channel: "test", ChatID: "c1", SenderID: "alice", Content: "hi"}
	if got := h.askFinal(t, user); got != "hello" {
		t.Fatalf("answer %q, want hello", got)
	}
	s, err := led.Summary(t.Context(), usage.Filter{}, usage.GroupSender)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Rows) != 1 || s.Rows[0].Key != "test:alice" || s.Rows[0].Input != 1000 || s.Rows[0].CacheRead != 800 || s.Rows[0].Output != 100 {
		t.Fatalf("ledger by sender = %+v, want test:alice with 1000 in (800 cached), 100 out", s.Rows)
	}
	// gpt-4o: 200 uncached at $2.50, 800 cached at $1.25, 100 out at $10 per million.
	if c := s.Total.Cost(); c == nil || *c < 0.0024999 || *c > 0.0025001 {
		t.Errorf("cost = %v, want 0.0025", c)
	}
	if u := s.Sources["user"]; u.Calls != 1 {
		t.Errorf("source user: %+v, want 1 call", u)
	}

	user.Content = "/usage"
	got := h.askFinal(t, user)
	for _, want := range []string{"This conversation: 1.0k in (800 cached), 100 out, 1 calls, $0.0025", "Today: 1.0k in", "This month: 1.0k in", "Prices as of"} {
		if !strings.Contains(got, want) {
			t.Errorf("/usage answer lacks %q:\n%s", want, got)
		}
	}

	user.Content = "/usage all"
	if got := h.askFinal(t, user); !strings.Contains(got, "Only an admin") {
		t.Errorf("/usage all by a non-admin: %q", got)
	}
	user.Admin = true
	if got := h.askFinal(t, user); !strings.Contains(got, "Usage of everyone") || !strings.Contains(got, "test: 1.0k in") {
		t.Errorf("/usage all by an admin:\n%s", got)
	}
}

// A server that reports no usage gets an estimate, marked as such.
func TestUsageEstimatedWhenNotReported(t *testing.T) {
	h, srv, led := usageHarness(t)
	go h.loop.Run(t.Context(), nil)
	srv.Push(providertest.Reply{Text: "a reply of a few words", NoUsage: true})
	h.askFinal(t, bus.Inbound{Channel: "test", ChatID: "c2", SenderID: "bob", Content: "hello there"})
	tot, _, err := led.Period(t.Context(), usage.Scope{Kind: usage.ScopeSender, ID: "test:bob"})
	if err != nil {
		t.Fatal(err)
	}
	if tot.Calls != 1 || tot.Estimated != 1 || tot.Input == 0 || tot.Output == 0 {
		t.Errorf("totals = %+v, want 1 estimated call with input and output tokens", tot)
	}
}

// A call a fallback answered is recorded under the provider and model
// that answered (so it is priced and a cost budget counts it), and the
// primary's failed call under the primary, with the model named as an
// answered call would be.
func TestFallbackCallsRecordedUnderTheirProvider(t *testing.T) {
	led, err := usage.Open(t.Context(), t.TempDir(), usage.Options{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = led.Close() })
	down := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) {
		return nil, &providers.Error{StatusCode: 503, Message: "down"}
	}}
	up := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) {
		return &providers.LLMResponse{Content: "from the fallback", Usage: providers.Usage{PromptTokens: 1000, CompletionTokens: 100, TotalTokens: 1100}}, nil
	}}
	chain := providers.NewFallback(nil,
		providers.Candidate{Model: "gpt-4o", Provider: down, Name: "openai"},
		providers.Candidate{Model: "claude-sonnet-4-5", Provider: up, Name: "anthropic"})
	h := newHarness(t, &fakeLLM{}, nil, func(c *LoopConfig) {
		c.Runner.Provider, c.Runner.Model = chain, "openai/gpt-4o"
		c.Runner.Ledger, c.Runner.ProviderName = led, "openai"
	})
	go h.loop.Run(t.Context(), nil)
	if got := h.askFinal(t, bus.Inbound{Channel: "test", ChatID: "c", SenderID: "u", Content: "hi"}); got != "from the fallback" {
		t.Fatalf("answer %q", got)
	}
	s, err := led.Summary(t.Context(), usage.Filter{}, usage.GroupModel)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]usage.Row{}
	for _, r := range s.Rows {
		rows[r.Key] = r
	}
	if r, ok := rows["anthropic/claude-sonnet-4-5"]; !ok || r.Calls != 1 || r.Errors != 0 || r.Cost() == nil {
		t.Errorf("the fallback's call: %+v (rows %v)", r, s.Rows)
	}
	if r, ok := rows["openai/gpt-4o"]; !ok || r.Calls != 1 || r.Errors != 1 {
		t.Errorf("the primary's failed call: %+v (rows %v)", r, s.Rows)
	}
	if len(rows) != 2 {
		t.Errorf("rows %+v, want the two calls", s.Rows)
	}
}

// Without a provider no call is made, so none is recorded (the usage page
// counted a failed call to a model nothing was sent to).
func TestNoProviderRecordsNoCall(t *testing.T) {
	led, err := usage.Open(t.Context(), t.TempDir(), usage.Options{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = led.Close() })
	h := newHarness(t, &fakeLLM{}, nil, func(c *LoopConfig) {
		c.Runner.Provider, c.Runner.Model = providers.Unconfigured{}, "anthropic/claude-sonnet-4-5"
		c.Runner.Ledger, c.Runner.ProviderName = led, ""
	})
	go h.loop.Run(t.Context(), nil)
	if got := h.askFinal(t, bus.Inbound{Channel: "test", ChatID: "c", SenderID: "u", Content: "hi"}); !strings.Contains(got, "No LLM provider") {
		t.Fatalf("answer %q", got)
	}
	s, err := led.Summary(t.Context(), usage.Filter{}, usage.GroupModel)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Rows) != 0 {
		t.Errorf("ledger rows %+v, want none", s.Rows)
	}
}
