package backends_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestEveryNamedProviderWithAKeyAlone: each provider nanobot knows by
// name resolves from {"<name>": {"apiKey": "k"}} alone — under nanobot's
// snake_case and camelCase spellings — to its vendor's documented API
// base, and a request reaches that base's path with the key and the
// provider's own headers (the base's host swapped for a local fake).
func TestEveryNamedProviderWithAKeyAlone(t *testing.T) {
	tests := []struct {
		names  []string // as configs write them; the first is ours
		base   string
		header string // a header the provider sends besides the key
		value  string
	}{
		{names: []string{"mistral"}, base: "https://api.mistral.ai/v1"},
		{names: []string{"nvidia"}, base: "https://integrate.api.nvidia.com/v1"},
		{names: []string{"kimi_coding", "kimiCoding"}, base: "https://api.kimi.com/coding", header: "User-Agent", value: "claude-code/0.1.0"},
		{names: []string{"minimax_anthropic", "minimaxAnthropic"}, base: "https://api.minimax.io/anthropic"},
		{names: []string{"qianfan"}, base: "https://qianfan.baidubce.com/v2"},
		{names: []string{"orcarouter"}, base: "https://api.orcarouter.ai/v1"},
		{names: []string{"huggingface"}, base: "https://router.huggingface.co/v1"},
		{names: []string{"novita"}, base: "https://api.novita.ai/openai"},
		{names: []string{"xiaomi_mimo", "xiaomiMimo"}, base: "https://api.xiaomimimo.com/v1"},
		{names: []string{"modelscope"}, base: "https://api-inference.modelscope.cn/v1"},
		{names: []string{"edenai"}, base: "https://api.edenai.run/v3"},
		{names: []string{"byteplus"}, base: "https://ark.ap-southeast.bytepluses.com/api/v3"},
		{names: []string{"byteplus_coding_plan", "byteplusCodingPlan"}, base: "https://ark.ap-southeast.bytepluses.com/api/coding/v3"},
		{names: []string{"volcengine_coding_plan", "volcengineCodingPlan"}, base: "https://ark.cn-beijing.volces.com/api/coding/v3"},
		{names: []string{"stepfun"}, base: "https://api.stepfun.com/v1"},
		{names: []string{"longcat"}, base: "https://api.longcat.chat/openai/v1"},
		{names: []string{"ant_ling", "antLing"}, base: "https://api.ant-ling.com/v1"},
		{names: []string{"skywork"}, base: "https://api.apifree.ai/agent/v1"},
		{names: []string{"opencode", "opencodeZen"}, base: "https://opencode.ai/zen/v1"},
		{names: []string{"opencode_go", "opencodeGo"}, base: "https://opencode.ai/zen/go/v1"},
		{names: []string{"atomic_chat", "atomicChat"}, base: "http://localhost:1337/v1"},
		{names: []string{"ovms"}, base: "http://localhost:8000/v3"},
		{names: []string{"xai", "xai_grok", "xaiGrok"}, base: "https://api.x.ai/v1"},
	}
	srv := providertest.New(t)
	fake, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		for _, name := range tt.names {
			t.Run(name, func(t *testing.T) {
				// "<name>/model" selects it by prefix; the wire model is
				// the bare name.
				// A gateway keeps the vendor's prefix: "<name>/vendor/model"
				// sends "vendor/model".
				wire := "test-model"
				if spec, _ := providers.Lookup(name); spec.IsGateway {
					wire = "vendor/test-model"
				}
				res, err := providers.Resolve(name+"/"+wire, "", map[string]providers.Settings{name: {APIKey: "k-" + name}})
				if err != nil {
					t.Fatal(err)
				}
				if res.Provider != tt.names[0] || res.APIBase != tt.base || res.Model != wire {
					t.Fatalf("resolved to %s at %s, model %q; want %s at %s, model %s", res.Provider, res.APIBase, res.Model, tt.names[0], tt.base, wire)
				}
				u, err := url.Parse(res.APIBase)
				if err != nil {
					t.Fatal(err)
				}
				u.Scheme, u.Host = fake.Scheme, fake.Host
				res.APIBase = u.String()
				srv.Push(providertest.Reply{Text: "hi from " + name})
				p, err := providers.New(res, options(srv))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := p.Chat(t.Context(), providers.ChatRequest{Messages: []providers.Message{{Role: "user", Content: "hi"}}})
				if err != nil {
					t.Fatal(err)
				}
				if resp.Content != "hi from "+name {
					t.Errorf("answer %q", resp.Content)
				}
				reqs := srv.Requests()
				got := reqs[len(reqs)-1]
				wantPath := strings.TrimSuffix(u.Path, "/") + "/chat/completions"
				key := got.Header.Get("Authorization") == "Bearer k-"+name
				if res.Spec.Backend == providers.BackendAnthropic {
					wantPath = strings.TrimSuffix(u.Path, "/") + "/v1/messages"
				}
				if got.Path != wantPath || got.Model != wire || !key {
					t.Errorf("request %s for model %q with headers %v; want %s, %s, the key", got.Path, got.Model, got.Header, wantPath, wire)
				}
				if tt.header != "" && got.Header.Get(tt.header) != tt.value {
					t.Errorf("%s: %q, want %q", tt.header, got.Header.Get(tt.header), tt.value)
				}
			})
		}
	}
}

// TestProviderHeadersGiveWayToTheConfig: a header the config's
// extraHeaders set replaces the provider's own of the same name, in
// whatever case it is written.
func TestProviderHeadersGiveWayToTheConfig(t *testing.T) {
	res, err := providers.Resolve("kimi_coding/k2", "", map[string]providers.Settings{
		"kimiCoding": {APIKey: "k", ExtraHeaders: map[string]string{"user-agent": "mine/1.0", "X-Extra": "1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ExtraHeaders) != 2 || res.ExtraHeaders["user-agent"] != "mine/1.0" || res.ExtraHeaders["X-Extra"] != "1" {
		t.Errorf("headers %v, want the config's user-agent and X-Extra only", res.ExtraHeaders)
	}
}
