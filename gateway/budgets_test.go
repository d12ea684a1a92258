package gateway

import (
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/openai"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// The limits section reaches the gateway's agent: a sender over their
// daily budget is told so on their platform and the model is not called;
// another sender is still answered.
func TestBudgetThroughTheGateway(t *testing.T) {
	if _, ok := natsURL.Load(t); ok {
		t.Skip("budgets in cluster mode count per worker (docs/usage.md); covered in agent/usage")
	}
	srv := providertest.New(t)
	srv.Handle(func(providertest.Request) providertest.Reply {
		return providertest.Reply{Text: "answer", Usage: &providertest.Usage{PromptTokens: 1000, CompletionTokens: 100}}
	})
	p, err := openai.New(openai.Options{Endpoint: providers.Endpoint{Name: "openai", APIKey: "sk-test", APIBase: srv.OpenAIBase(), HTTPClient: srv.Client()}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(map[string][]any{"fake": {"*"}})
	cfg.Limits = configs.LimitsConfig{PerSender: configs.BudgetConfig{DailyTokens: 1000}}
	fc := newFake("fake")
	startGatewayOpts(t, cfg, p, func(o *Options) { o.Model, o.ProviderName = "gpt-4o-mini", "openai" }, fc)

	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c1", SenderID: "u1", Content: "one", MessageID: "1"}
	waitfor.True(t, "the first answer", func() bool { return len(fc.texts("c1")) == 1 })
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c1", SenderID: "u1", Content: "two", MessageID: "2"}
	waitfor.True(t, "the refusal", func() bool { return len(fc.texts("c1")) == 2 })
	if got := fc.texts("c1")[1]; !strings.HasPrefix(got, "You have reached your daily token budget (1,000 tokens). It resets at 00:00 on ") {
		t.Errorf("second answer %q, want the budget message", got)
	}
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c2", SenderID: "u2", Content: "three", MessageID: "3"}
	waitfor.True(t, `another sender's answer "answer"`, func() bool { got := fc.texts("c2"); return len(got) == 1 && got[0] == "answer" })
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("the provider got %d requests, want 2 (none over the budget)", n)
	}
}
