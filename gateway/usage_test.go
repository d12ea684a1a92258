package gateway

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/openai"
	"github.com/nanobot-go/nanobot/providers/providertest"
	"github.com/nanobot-go/nanobot/tools"
)

// A real turn through the gateway, against the OpenAI backend and a
// scripted server: the call is in the ledger under the instance folder,
// and /metrics has its tokens, cost, latency and tool call.
func TestUsageLedgerAndMetricsAfterTurn(t *testing.T) {
	if _, ok := natsURL.Load(t); ok {
		t.Skip("the ledger's cluster parts are covered in agent/usage")
	}
	srv := providertest.New(t)
	srv.Push(providertest.Reply{ToolCalls: []providertest.ToolCall{{Name: "clock", Arguments: `{}`}},
		Usage: &providertest.Usage{PromptTokens: 2000, CompletionTokens: 20, CacheReadTokens: 1000, ReasoningTokens: 8}})
	srv.Push(providertest.Reply{Text: "It is noon.", Usage: &providertest.Usage{PromptTokens: 2100, CompletionTokens: 10, CacheReadTokens: 2000}})
	p, err := openai.New(openai.Options{Endpoint: providers.Endpoint{Name: "openai", APIKey: "sk-test", APIBase: srv.OpenAIBase(), HTTPClient: srv.Client()}})
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	if err := reg.Register(clockTool{}); err != nil {
		t.Fatal(err)
	}
	fc := newFake("fake")
	r := startGatewayOpts(t, testConfig(map[string][]any{"fake": {"*"}}), p, func(o *Options) {
		o.Tools, o.Model, o.ProviderName = reg, "gpt-4o-mini", "openai"
	}, fc)
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c1", SenderID: "u1", Content: "time?", MessageID: "1"}
	waitfor.True(t, "reply", func() bool {
		got := fc.texts("c1")
		return len(got) > 0 && got[len(got)-1] == "It is noon."
	})

	// gpt-4o-mini: $0.15 input, $0.075 cached, $0.60 output per million.
	// Call 1: 1000*0.15 + 1000*0.075 + 20*0.60 = 237 micro-dollars;
	// call 2: 100*0.15 + 2000*0.075 + 10*0.60 = 171.
	want := []string{
		`nanobot_llm_request_duration_seconds_count{model="gpt-4o-mini",outcome="ok",provider="openai"} 2`,
		`nanobot_llm_tokens_total{kind="input",model="gpt-4o-mini",provider="openai"} 4100`,
		`nanobot_llm_tokens_total{kind="cache_read",model="gpt-4o-mini",provider="openai"} 3000`,
		`nanobot_llm_tokens_total{kind="output",model="gpt-4o-mini",provider="openai"} 30`,
		`nanobot_llm_tokens_total{kind="reasoning",model="gpt-4o-mini",provider="openai"} 8`,
		`nanobot_llm_cost_total{model="gpt-4o-mini",provider="openai"} 0.000408`,
		`nanobot_tool_calls_total{outcome="ok",tool="clock"} 1`,
	}
	var body string
	waitfor.True(t, "metrics", func() bool {
		_, body = get(t, "http://"+r.addr+"/metrics")
		for _, w := range want {
			if !strings.Contains(body, w) {
				return false
			}
		}
		return true
	})

	dir := filepath.Join(r.dir, "usage")
	recs, err := usage.Records(context.Background(), dir, time.Local, usage.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("ledger has %d records, want 2", len(recs))
	}
	got := recs[0]
	if got.Channel != "fake" || got.Chat != "c1" || got.Sender != "u1" || got.Session != "fake:c1" || got.Source != "user" ||
		got.Provider != "openai" || got.Model != "gpt-4o-mini" || got.Agent != "default" || got.Input != 2000 || got.CacheRead != 1000 ||
		got.Output != 20 || got.Reasoning != 8 || got.Outcome != "ok" || got.Estimated || got.CostUSD == nil {
		t.Errorf("first record = %+v", got)
	}
}

// Prices are keyed the way the ledger names providers: an override under
// a config spelling ("azureOpenai") prices the calls recorded under the
// registry name the resolver gives ("azure_openai"); a config-named
// endpoint ("companyProxy") is priced by its model when the model is
// known, and stays unknown (never 0) when it is not.
func TestPricesKeyedLikeTheLedger(t *testing.T) {
	var cfg configs.Config
	err := json.Unmarshal([]byte(`{"providers": {
		"azureOpenai": {"apiKey": "k", "apiBase": "https://x.openai.azure.com", "apiVersion": "2024-10-21",
			"prices": {"my-gpt4o-deployment": {"input": 2, "output": 8}}},
		"companyProxy": {"apiKey": "k", "apiBase": "https://llm.example.com/v1"}
	}}`), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]providers.Settings{}
	for name, pc := range cfg.Providers {
		settings[name] = providers.Settings{APIKey: pc.APIKey, APIBase: pc.APIBase, APIVersion: pc.APIVersion}
	}
	prices := Prices(&cfg)
	for _, c := range []struct {
		model, forced string
		want          *float64 // nil: unknown
	}{
		{"my-gpt4o-deployment", "azure-openai", ptrTo(2.0 + 8.0/10)},
		{"gpt-4o-mini", "companyProxy", ptrTo(0.15 + 0.60/10)},
		{"companyProxy/gpt-4o-mini", "", ptrTo(0.15 + 0.60/10)},
		{"in-house-7b", "companyProxy", nil},
	} {
		res, err := providers.Resolve(c.model, c.forced, settings)
		if err != nil {
			t.Fatalf("resolve %s: %v", c.model, err)
		}
		rec := usage.Record{Provider: res.Provider, Model: res.Model, Input: 1_000_000, Output: 100_000}
		got := prices.Cost(&rec)
		switch {
		case c.want == nil && got != nil:
			t.Errorf("%s on %s: cost %g, want unknown", res.Model, res.Provider, *got)
		case c.want != nil && (got == nil || math.Abs(*got-*c.want) > 1e-9):
			t.Errorf("%s on %s: cost %v, want %g", res.Model, res.Provider, got, *c.want)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// The heartbeat's own call (is a task due?) is a model call like any
// other: it is in the usage ledger under source "heartbeat", charged to
// the chat the tasks run in, and held to the budgets. Every request the
// model server answered has a ledger record.
func TestHeartbeatDecisionIsMetered(t *testing.T) {
	if _, ok := natsURL.Load(t); ok {
		t.Skip("the ledger's cluster parts are covered in agent/usage")
	}
	srv := providertest.New(t)
	srv.Handle(func(req providertest.Request) providertest.Reply {
		if strings.Contains(string(req.Raw), `"heartbeat"`) && strings.Contains(string(req.Raw), "Tasks (from HEARTBEAT.md)") {
			return providertest.Reply{ToolCalls: []providertest.ToolCall{{Name: "heartbeat", Arguments: `{"action":"skip"}`}},
				Usage: &providertest.Usage{PromptTokens: 300, CompletionTokens: 5}}
		}
		return providertest.Reply{Text: "hello", Usage: &providertest.Usage{PromptTokens: 100, CompletionTokens: 2}}
	})
	p, err := openai.New(openai.Options{Endpoint: providers.Endpoint{Name: "openai", APIKey: "sk-test", APIBase: srv.OpenAIBase(), HTTPClient: srv.Client()}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(map[string][]any{"fake": {"*"}})
	cfg.Gateway.Heartbeat.Enabled, cfg.Gateway.Heartbeat.IntervalS = true, 1
	fc := newFake("fake")
	r := startGatewayOpts(t, cfg, p, func(o *Options) {
		o.Model, o.ProviderName = "gpt-4o-mini", "openai"
		if err := os.MkdirAll(o.Paths.Workspace, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(o.Paths.Workspace, "HEARTBEAT.md"), []byte("- water the plants at 18:00\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}, fc)
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c1", SenderID: "u1", Content: "hi", MessageID: "1"}
	waitfor.True(t, "reply", func() bool { return len(fc.texts("c1")) > 0 })

	dir := filepath.Join(r.dir, "usage")
	var recs []usage.Record
	waitfor.True(t, "a heartbeat decision and every request in the ledger", func() bool {
		n := len(srv.Requests())
		recs, err = usage.Records(context.Background(), dir, time.Local, usage.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		return n >= 2 && len(recs) == n
	})
	var hb *usage.Record
	for i := range recs {
		if recs[i].Source == "heartbeat" {
			hb = &recs[i]
		}
	}
	if hb == nil {
		t.Fatalf("no heartbeat record in %+v", recs)
	}
	if hb.Channel != "fake" || hb.Chat != "c1" || hb.Session != "heartbeat" || hb.Input != 300 || hb.Output != 5 || hb.Outcome != "ok" {
		t.Errorf("heartbeat record = %+v", *hb)
	}
}
