package providers_test

import (
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/providers"
)

func TestResolve(t *testing.T) {
	key := func(k string) providers.Settings { return providers.Settings{APIKey: k} }
	base := func(b string) providers.Settings { return providers.Settings{APIBase: b} }
	tests := []struct {
		name       string
		model      string
		forced     string
		configured map[string]providers.Settings
		want       string // provider
		wantLevel  providers.MatchLevel
		wantModel  string
		wantBase   string
		wantErr    string
	}{
		// Level 1: forced.
		{name: "forced provider wins over keyword", model: "claude-sonnet-4", forced: "openrouter",
			configured: map[string]providers.Settings{"anthropic": key("a"), "openrouter": key("o")},
			want:       "openrouter", wantLevel: providers.MatchForced, wantModel: "claude-sonnet-4", wantBase: "https://openrouter.ai/api/v1"},
		{name: "forced strips its own prefix", model: "deepseek/deepseek-chat", forced: "deepseek",
			configured: map[string]providers.Settings{"deepseek": key("d")},
			want:       "deepseek", wantLevel: providers.MatchForced, wantModel: "deepseek-chat"},
		{name: "forced alias spelling", model: "gpt-4o", forced: "Azure-OpenAI",
			configured: map[string]providers.Settings{"azureOpenai": {APIKey: "z", APIBase: "https://x.openai.azure.com", APIVersion: "2024-10-21"}},
			want:       "azure_openai", wantLevel: providers.MatchForced, wantModel: "gpt-4o", wantBase: "https://x.openai.azure.com"},
		{name: "forced local without key", model: "llama3", forced: "ollama",
			configured: map[string]providers.Settings{},
			want:       "ollama", wantLevel: providers.MatchForced, wantModel: "llama3", wantBase: "http://localhost:11434/v1"},
		{name: "forced unknown", model: "x", forced: "nosuch", wantErr: "unknown provider"},
		{name: "forced but no key", model: "x", forced: "deepseek", wantErr: "providers.deepseek.apiKey"},
		{name: "forced auto is no force", model: "deepseek-chat", forced: "auto",
			configured: map[string]providers.Settings{"deepseek": key("d")},
			want:       "deepseek", wantLevel: providers.MatchKeyword, wantModel: "deepseek-chat"},

		// Level 2: prefix.
		{name: "gateway prefix keeps the vendor path", model: "openrouter/anthropic/claude-3.5",
			configured: map[string]providers.Settings{"openrouter": key("o"), "anthropic": key("a")},
			want:       "openrouter", wantLevel: providers.MatchPrefix, wantModel: "anthropic/claude-3.5"},
		{name: "gateway model named after the gateway", model: "openrouter/auto",
			configured: map[string]providers.Settings{"openrouter": key("o")},
			want:       "openrouter", wantLevel: providers.MatchPrefix, wantModel: "openrouter/auto"},
		{name: "local prefix on its default address, no settings", model: "ollama/llama3.2",
			configured: map[string]providers.Settings{"ollama": {}},
			want:       "ollama", wantLevel: providers.MatchPrefix, wantModel: "llama3.2", wantBase: "http://localhost:11434/v1"},
		{name: "local prefix, no entry at all", model: "lm_studio/qwen3",
			configured: map[string]providers.Settings{},
			want:       "lmstudio", wantLevel: providers.MatchPrefix, wantModel: "qwen3", wantBase: "http://localhost:1234/v1"},
		{name: "local prefix stripped", model: "ollama/qwen2.5:7b",
			configured: map[string]providers.Settings{"ollama": base("http://127.0.0.1:11434/v1"), "dashscope": key("q")},
			want:       "ollama", wantLevel: providers.MatchPrefix, wantModel: "qwen2.5:7b", wantBase: "http://127.0.0.1:11434/v1"},
		{name: "prefix of an unconfigured provider falls through", model: "anthropic/claude-3.5-sonnet",
			configured: map[string]providers.Settings{"openrouter": key("o")},
			want:       "openrouter", wantLevel: providers.MatchFallback, wantModel: "anthropic/claude-3.5-sonnet"},

		// Level 3: keyword among configured providers.
		{name: "deepseek keyword", model: "deepseek-chat",
			configured: map[string]providers.Settings{"openrouter": key("o"), "deepseek": key("d")},
			want:       "deepseek", wantLevel: providers.MatchKeyword, wantModel: "deepseek-chat", wantBase: "https://api.deepseek.com/v1"},
		{name: "claude keyword", model: "claude-opus-4",
			configured: map[string]providers.Settings{"anthropic": key("a"), "openai": key("o")},
			want:       "anthropic", wantLevel: providers.MatchKeyword, wantModel: "claude-opus-4"},
		{name: "keyword at a word start only", model: "llamao1-8b",
			configured: map[string]providers.Settings{"openai": key("o"), "groq": key("g")},
			want:       "openai", wantLevel: providers.MatchFallback, wantModel: "llamao1-8b"},
		{name: "kimi keyword", model: "kimi-k2-0905",
			configured: map[string]providers.Settings{"openrouter": key("o"), "moonshot": key("m")},
			want:       "moonshot", wantLevel: providers.MatchKeyword, wantModel: "kimi-k2-0905"},
		{name: "glm keyword", model: "GLM-4.6",
			configured: map[string]providers.Settings{"zhipu": key("z")},
			want:       "zhipu", wantLevel: providers.MatchKeyword, wantModel: "GLM-4.6"},

		// Level 4: local server with an apiBase.
		{name: "qwen with only ollama goes to ollama, not dashscope", model: "qwen2.5",
			configured: map[string]providers.Settings{"ollama": base("http://localhost:11434/v1")},
			want:       "ollama", wantLevel: providers.MatchLocal, wantModel: "qwen2.5", wantBase: "http://localhost:11434/v1"},
		{name: "vllm serving an HF repo id", model: "meta-llama/Llama-3.1-8B-Instruct",
			configured: map[string]providers.Settings{"vllm": base("http://gpu:8000/v1")},
			want:       "vllm", wantLevel: providers.MatchLocal, wantModel: "meta-llama/Llama-3.1-8B-Instruct", wantBase: "http://gpu:8000/v1"},
		{name: "custom endpoint", model: "my-model",
			configured: map[string]providers.Settings{"custom": base("http://10.0.0.5:8080/v1")},
			want:       "custom", wantLevel: providers.MatchLocal, wantModel: "my-model"},
		{name: "local with keyword beats other local", model: "qwen2.5",
			configured: map[string]providers.Settings{"ollama": base("http://o/v1"), "lmstudio": base("http://l/v1"), "dashscope": key("q")},
			want:       "dashscope", wantLevel: providers.MatchKeyword, wantModel: "qwen2.5"},

		// Level 5: first provider with a key, in registry order.
		{name: "first keyed provider", model: "mystery-model",
			configured: map[string]providers.Settings{"deepseek": key("d"), "openrouter": key("o")},
			want:       "openrouter", wantLevel: providers.MatchFallback, wantModel: "mystery-model"},
		{name: "empty settings do not count", model: "mystery-model",
			configured: map[string]providers.Settings{"openrouter": {}, "groq": key("g")},
			want:       "groq", wantLevel: providers.MatchFallback, wantModel: "mystery-model"},
		{name: "azure without apiBase is not configured", model: "gpt-4o",
			configured: map[string]providers.Settings{"azure_openai": key("z")},
			wantErr:    "no provider configured"},
		{name: "nothing configured", model: "gpt-4o", wantErr: "no provider configured"},
		{name: "empty model", model: " ", wantErr: "model name is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := providers.Resolve(tt.model, tt.forced, tt.configured)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to mention %q (got %s)", err, tt.wantErr, res.Provider)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if res.Provider != tt.want || res.Level != tt.wantLevel || res.Model != tt.wantModel {
				t.Errorf("got %s level %v model %q, want %s level %v model %q (reason %q)",
					res.Provider, res.Level, res.Model, tt.want, tt.wantLevel, tt.wantModel, res.Reason)
			}
			if tt.wantBase != "" && res.APIBase != tt.wantBase {
				t.Errorf("APIBase = %q, want %q", res.APIBase, tt.wantBase)
			}
			if res.Reason == "" {
				t.Error("empty Reason")
			}
			if res.RequestedModel != strings.TrimSpace(tt.model) {
				t.Errorf("RequestedModel = %q", res.RequestedModel)
			}
		})
	}
}

func TestRegistryCoversTheBrief(t *testing.T) {
	for _, name := range []string{"openai", "anthropic", "openrouter", "deepseek", "gemini", "groq", "moonshot", "zhipu",
		"dashscope", "siliconflow", "volcengine", "aihubmix", "minimax", "vllm", "ollama", "lmstudio", "custom", "azure_openai"} {
		spec, ok := providers.Lookup(name)
		if !ok {
			t.Errorf("%s missing from the registry", name)
			continue
		}
		if spec.Backend == "" || spec.DisplayName == "" {
			t.Errorf("%s: incomplete spec %+v", name, spec)
		}
	}
	specs := providers.Specs()
	specs[0].Name = "mutated"
	if providers.Specs()[0].Name == "mutated" {
		t.Error("Specs exposes the registry itself")
	}
	if g, _ := providers.Lookup("gemini"); g.SchemaDialect != providers.DialectGemini {
		t.Error("gemini must use the Gemini schema dialect")
	}
}

func TestMatchLevelString(t *testing.T) {
	if got := providers.MatchKeyword.String(); got != "keyword" {
		t.Errorf("MatchKeyword = %q", got)
	}
}

func TestResolveBedrock(t *testing.T) {
	region := providers.Settings{Region: "us-east-1"}
	both := map[string]providers.Settings{"anthropic": {APIKey: "a"}, "bedrock": region}
	tests := []struct {
		name, model, forced string
		configured          map[string]providers.Settings
		want, wantModel     string
		wantLevel           providers.MatchLevel
	}{
		{name: "inference profile id by keyword, over anthropic", model: "us.anthropic.claude-sonnet-4-20250514-v1:0", configured: both,
			want: "bedrock", wantModel: "us.anthropic.claude-sonnet-4-20250514-v1:0", wantLevel: providers.MatchKeyword},
		{name: "bare claude still goes to anthropic", model: "claude-sonnet-4", configured: both,
			want: "anthropic", wantModel: "claude-sonnet-4", wantLevel: providers.MatchKeyword},
		{name: "prefix removed", model: "bedrock/amazon.nova-pro-v1:0", configured: map[string]providers.Settings{"bedrock": {Profile: "work"}},
			want: "bedrock", wantModel: "amazon.nova-pro-v1:0", wantLevel: providers.MatchPrefix},
		{name: "forced with an empty entry (all from the environment)", model: "meta.llama3-70b-instruct-v1:0", forced: "bedrock",
			configured: map[string]providers.Settings{"bedrock": {}},
			want:       "bedrock", wantModel: "meta.llama3-70b-instruct-v1:0", wantLevel: providers.MatchForced},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := providers.Resolve(tc.model, tc.forced, tc.configured)
			if err != nil {
				t.Fatal(err)
			}
			if res.Provider != tc.want || res.Model != tc.wantModel || res.Level != tc.wantLevel {
				t.Errorf("got %s %q %s, want %s %q %s", res.Provider, res.Model, res.Level, tc.want, tc.wantModel, tc.wantLevel)
			}
			if tc.want == "bedrock" && res.Spec.Backend != providers.BackendBedrock {
				t.Errorf("backend %q", res.Spec.Backend)
			}
		})
	}
	// An empty bedrock entry does not claim Bedrock model ids by keyword.
	if _, err := providers.Resolve("amazon.nova-pro-v1:0", "", map[string]providers.Settings{"bedrock": {}}); err == nil {
		t.Error("an unconfigured bedrock entry matched by keyword")
	}
	res, err := providers.Resolve("us.anthropic.claude-sonnet-4", "", map[string]providers.Settings{"bedrock": {Region: "eu-west-1", Profile: "p"}})
	if err != nil || res.Region != "eu-west-1" || res.Profile != "p" {
		t.Errorf("region/profile not carried: %+v %v", res, err)
	}
}

// The error for a model that resolves nowhere names the provider its
// prefix or a keyword points at, not a fixed example.
func TestUnconfiguredModelNamesItsProvider(t *testing.T) {
	for model, want := range map[string]string{
		"openai/gpt-4o":    "set providers.openai.apiKey",
		"deepseek-chat":    "set providers.deepseek.apiKey",
		"some-odd-model":   "for example providers.openrouter.apiKey",
		"anthropic/claude": "set providers.anthropic.apiKey",
	} {
		_, err := providers.Resolve(model, "", map[string]providers.Settings{})
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "~/.nanobot") {
			t.Errorf("%s: %v, want it to say %q", model, err, want)
		}
	}
}
