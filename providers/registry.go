package providers

import (
	"fmt"
	"strings"
)

// Backends: the wire protocol a provider speaks.
const (
	BackendOpenAICompat = "openai_compat"
	BackendAnthropic    = "anthropic"
	BackendAzureOpenAI  = "azure_openai"
	// BackendOpenAIResponses is OpenAI's Responses API, chosen per
	// provider with api: "responses" (Settings.API).
	BackendOpenAIResponses = "openai_responses"
	// BackendBedrock is AWS Bedrock Runtime's Converse API.
	BackendBedrock = "bedrock"
)

// APIs a provider can be switched to (providers.<name>.api).
const (
	APIChat      = "chat"
	APIResponses = "responses"
)

// ProviderSpec is the static description of one LLM vendor.
type ProviderSpec struct {
	// Name is the config key (providers.<name>) and the model prefix ("name/model").
	Name string
	// DisplayName is for humans (nanobot status).
	DisplayName string
	// Keywords route a bare model name here when one appears in it at a
	// word start ("claude-sonnet-4" -> anthropic).
	Keywords []string
	// EnvKey is the conventional environment variable holding the API key,
	// for help texts. Resolve never reads the environment.
	EnvKey string
	// DefaultAPIBase is used when the config sets no apiBase; empty means the
	// user must supply one.
	DefaultAPIBase string
	// Backend is one of the Backend* constants.
	Backend string
	// IsGateway: an aggregator reached with one key for many vendors' models;
	// model names keep their "vendor/" prefix.
	IsGateway bool
	// IsLocal: a server on the user's machine; configured by an apiBase alone.
	IsLocal bool
	// IsDirect: the user supplies the full endpoint (custom, Azure).
	IsDirect bool
	// KeyOptional: configured by an apiBase alone (local servers, custom).
	KeyOptional bool
	// StripModelPrefix: remove the provider's own "name/" from the model
	// before sending it.
	StripModelPrefix bool
	// SchemaDialect is the tool-schema flavour the vendor accepts.
	SchemaDialect SchemaDialect
	// NoReasoningReplay: the vendor rejects reasoning_content on replayed
	// assistant messages.
	NoReasoningReplay bool
	// MaxCompletionTokens: send max_completion_tokens instead of max_tokens.
	MaxCompletionTokens bool
	// SignIn: the provider is reached with the user's subscription sign-in
	// (nanobot provider login NAME), not an API key; Options.SignIn adds the
	// short-lived credentials to each request.
	SignIn bool
	// EntraID: without an apiKey the provider signs in with Microsoft
	// Entra ID (providers/entra), configured by its apiBase alone.
	EntraID bool
	// Headers are sent with every request unless the config's
	// extraHeaders set the same header (Kimi's coding endpoint asks for a
	// User-Agent of its own).
	Headers map[string]string
	// AWSCredentials: the provider signs with AWS credentials from the
	// environment or shared files, and derives its endpoint from the
	// region; a region, profile, apiKey or apiBase in the config marks it
	// configured.
	AWSCredentials bool
	// KeyedAs names the provider this entry stands for when its settings
	// carry an apiKey: nanobot's providers.xaiGrok is the Grok subscription
	// sign-in, and with an apiKey it is xAI's API (xai), as it was read
	// before the sign-in existed.
	KeyedAs string
	// custom marks a config-named OpenAI-compatible endpoint (see
	// customNamed); its "name/" model prefix is always removed.
	custom bool
}

// Settings is what the config holds for one provider (providers.<name>).
type Settings struct {
	APIKey       string
	APIBase      string
	ExtraHeaders map[string]string
	// APIVersion is the Azure OpenAI api-version (azure_openai only).
	APIVersion string
	// API selects the wire API of an OpenAI-compatible provider: "" or
	// APIChat for chat completions, APIResponses for the Responses API.
	API string
	// SignedIn: a sign-in provider has stored credentials (filled by cmd from
	// the token store; Resolve never reads files).
	SignedIn bool
	// ExtraBody is merged into every request body (top-level keys win).
	ExtraBody map[string]any
	// Proxy is an http://, https:// or socks5:// proxy URL for this
	// provider's requests ("": the environment's proxy settings).
	Proxy string
	// Region and Profile are AWS settings (bedrock only): the region, and
	// the shared config/credentials profile.
	Region, Profile string
	// NoTextToolCalls keeps tool calls a model writes as text (a local
	// server's template not parsing them) as text; see TextToolCalls
	// (config textToolCalls: false).
	NoTextToolCalls bool
}

// specs is the registry, in matching order: gateways, then vendors, then
// local servers, then the user-defined endpoints. It is never modified;
// Specs hands out copies.
var specs = []ProviderSpec{
	{Name: "openrouter", DisplayName: "OpenRouter", Keywords: []string{"openrouter"}, EnvKey: "OPENROUTER_API_KEY",
		DefaultAPIBase: "https://openrouter.ai/api/v1", Backend: BackendOpenAICompat, IsGateway: true, StripModelPrefix: true},
	{Name: "aihubmix", DisplayName: "AiHubMix", Keywords: []string{"aihubmix"}, EnvKey: "AIHUBMIX_API_KEY",
		DefaultAPIBase: "https://aihubmix.com/v1", Backend: BackendOpenAICompat, IsGateway: true, StripModelPrefix: true},
	{Name: "siliconflow", DisplayName: "SiliconFlow", Keywords: []string{"siliconflow"}, EnvKey: "SILICONFLOW_API_KEY",
		DefaultAPIBase: "https://api.siliconflow.cn/v1", Backend: BackendOpenAICompat, IsGateway: true, StripModelPrefix: true},
	{Name: "orcarouter", DisplayName: "OrcaRouter", Keywords: []string{"orcarouter"}, EnvKey: "ORCAROUTER_API_KEY",
		DefaultAPIBase: "https://api.orcarouter.ai/v1", Backend: BackendOpenAICompat, IsGateway: true, StripModelPrefix: true},
	{Name: "edenai", DisplayName: "Eden AI", Keywords: []string{"edenai"}, EnvKey: "EDENAI_API_KEY",
		DefaultAPIBase: "https://api.edenai.run/v3", Backend: BackendOpenAICompat, IsGateway: true, StripModelPrefix: true},
	{Name: "huggingface", DisplayName: "Hugging Face", Keywords: []string{"huggingface", "hugging-face"}, EnvKey: "HF_TOKEN",
		DefaultAPIBase: "https://router.huggingface.co/v1", Backend: BackendOpenAICompat, IsGateway: true, StripModelPrefix: true},
	{Name: "skywork", DisplayName: "Skywork (APIFree)", Keywords: []string{"skywork", "apifree"}, EnvKey: "SKYWORK_API_KEY",
		DefaultAPIBase: "https://api.apifree.ai/agent/v1", Backend: BackendOpenAICompat, IsGateway: true, StripModelPrefix: true},
	{Name: "novita", DisplayName: "Novita AI", Keywords: []string{"novita"}, EnvKey: "NOVITA_API_KEY",
		DefaultAPIBase: "https://api.novita.ai/openai", Backend: BackendOpenAICompat, IsGateway: true, StripModelPrefix: true},
	{Name: "modelscope", DisplayName: "ModelScope", Keywords: []string{"modelscope"}, EnvKey: "MODELSCOPE_API_KEY",
		DefaultAPIBase: "https://api-inference.modelscope.cn/v1", Backend: BackendOpenAICompat, IsGateway: true, StripModelPrefix: true},
	// OpenCode Zen and Go take bare model names ("opencode/<model>" sends
	// "<model>"), as do the VolcEngine and BytePlus platforms: not
	// gateways in WireModel's sense.
	{Name: "opencode", DisplayName: "OpenCode Zen", Keywords: []string{"opencode", "opencode-zen"}, EnvKey: "OPENCODE_API_KEY",
		DefaultAPIBase: "https://opencode.ai/zen/v1", Backend: BackendOpenAICompat, StripModelPrefix: true},
	{Name: "opencode_go", DisplayName: "OpenCode Go", Keywords: []string{"opencode-go", "opencode_go"}, EnvKey: "OPENCODE_API_KEY",
		DefaultAPIBase: "https://opencode.ai/zen/go/v1", Backend: BackendOpenAICompat, StripModelPrefix: true},
	{Name: "volcengine", DisplayName: "VolcEngine Ark", Keywords: []string{"volcengine", "volces", "doubao"}, EnvKey: "ARK_API_KEY",
		DefaultAPIBase: "https://ark.cn-beijing.volces.com/api/v3", Backend: BackendOpenAICompat, StripModelPrefix: true},
	{Name: "volcengine_coding_plan", DisplayName: "VolcEngine Coding Plan", Keywords: []string{"volcengine-plan"}, EnvKey: "ARK_API_KEY",
		DefaultAPIBase: "https://ark.cn-beijing.volces.com/api/coding/v3", Backend: BackendOpenAICompat, StripModelPrefix: true},
	{Name: "byteplus", DisplayName: "BytePlus ModelArk", Keywords: []string{"byteplus"}, EnvKey: "BYTEPLUS_API_KEY",
		DefaultAPIBase: "https://ark.ap-southeast.bytepluses.com/api/v3", Backend: BackendOpenAICompat, StripModelPrefix: true},
	{Name: "byteplus_coding_plan", DisplayName: "BytePlus Coding Plan", Keywords: []string{"byteplus-plan"}, EnvKey: "BYTEPLUS_API_KEY",
		DefaultAPIBase: "https://ark.ap-southeast.bytepluses.com/api/coding/v3", Backend: BackendOpenAICompat, StripModelPrefix: true},

	// Before anthropic, so Bedrock's "anthropic.claude-..." model ids route
	// here when both are configured (a bare "claude-..." still goes to
	// Anthropic: no keyword below matches it).
	{Name: "bedrock", DisplayName: "AWS Bedrock", EnvKey: "AWS_BEARER_TOKEN_BEDROCK",
		Keywords: []string{"bedrock", "anthropic.claude", "amazon.nova", "amazon.titan", "meta.llama", "mistral.", "cohere.", "qwen.",
			"deepseek.", "openai.gpt-oss", "ai21.", "moonshot.", "writer.", "zai."},
		Backend: BackendBedrock, StripModelPrefix: true, SchemaDialect: DialectAnthropic, AWSCredentials: true},
	{Name: "anthropic", DisplayName: "Anthropic", Keywords: []string{"anthropic", "claude"}, EnvKey: "ANTHROPIC_API_KEY",
		DefaultAPIBase: "https://api.anthropic.com", Backend: BackendAnthropic, StripModelPrefix: true, SchemaDialect: DialectAnthropic},
	{Name: "openai", DisplayName: "OpenAI", Keywords: []string{"openai", "gpt", "chatgpt", "o1", "o3", "o4"}, EnvKey: "OPENAI_API_KEY",
		DefaultAPIBase: "https://api.openai.com/v1", Backend: BackendOpenAICompat, StripModelPrefix: true,
		NoReasoningReplay: true, MaxCompletionTokens: true},
	{Name: "deepseek", DisplayName: "DeepSeek", Keywords: []string{"deepseek"}, EnvKey: "DEEPSEEK_API_KEY",
		DefaultAPIBase: "https://api.deepseek.com/v1", Backend: BackendOpenAICompat, StripModelPrefix: true},
	{Name: "gemini", DisplayName: "Google Gemini", Keywords: []string{"gemini", "gemma"}, EnvKey: "GEMINI_API_KEY",
		DefaultAPIBase: "https://generativelanguage.googleapis.com/v1beta/openai", Backend: BackendOpenAICompat,
		StripModelPrefix: true, SchemaDialect: DialectGemini, NoReasoningReplay: true},
	{Name: "groq", DisplayName: "Groq", Keywords: []string{"groq"}, EnvKey: "GROQ_API_KEY",
		DefaultAPIBase: "https://api.groq.com/openai/v1", Backend: BackendOpenAICompat, StripModelPrefix: true, NoReasoningReplay: true},
	{Name: "moonshot", DisplayName: "Moonshot (Kimi)", Keywords: []string{"moonshot", "kimi"}, EnvKey: "MOONSHOT_API_KEY",
		DefaultAPIBase: "https://api.moonshot.cn/v1", Backend: BackendOpenAICompat, StripModelPrefix: true},
	{Name: "zhipu", DisplayName: "Zhipu AI (GLM)", Keywords: []string{"zhipu", "glm", "chatglm"}, EnvKey: "ZHIPUAI_API_KEY",
		DefaultAPIBase: "https://open.bigmodel.cn/api/paas/v4", Backend: BackendOpenAICompat, StripModelPrefix: true},
	{Name: "dashscope", DisplayName: "DashScope (Qwen)", Keywords: []string{"qwen", "qwq", "dashscope"}, EnvKey: "DASHSCOPE_API_KEY",
		DefaultAPIBase: "https://dashscope.aliyuncs.com/compatible-mode/v1", Backend: BackendOpenAICompat, StripModelPrefix: true},
	{Name: "minimax", DisplayName: "MiniMax", Keywords: []string{"minimax", "abab"}, EnvKey: "MINIMAX_API_KEY",
		DefaultAPIBase: "https://api.minimax.io/v1", Backend: BackendOpenAICompat, StripModelPrefix: true},

	{Name: "kimi_coding", DisplayName: "Kimi Coding (Anthropic API)", Keywords: []string{"kimi-coding", "kimi_coding", "kimi-for-coding"}, EnvKey: "KIMI_CODING_API_KEY",
		DefaultAPIBase: "https://api.kimi.com/coding", Backend: BackendAnthropic, StripModelPrefix: true, SchemaDialect: DialectAnthropic,
		Headers: map[string]string{"User-Agent": "claude-code/0.1.0"}},
	{Name: "minimax_anthropic", DisplayName: "MiniMax (Anthropic API)", Keywords: []string{"minimax_anthropic", "minimax-anthropic"}, EnvKey: "MINIMAX_API_KEY",
		DefaultAPIBase: "https://api.minimax.io/anthropic", Backend: BackendAnthropic, StripModelPrefix: true, SchemaDialect: DialectAnthropic},
	{Name: "mistral", DisplayName: "Mistral AI", Keywords: []string{"mistral", "magistral", "ministral", "codestral", "devstral"}, EnvKey: "MISTRAL_API_KEY",
		DefaultAPIBase: "https://api.mistral.ai/v1", Backend: BackendOpenAICompat, StripModelPrefix: true, NoReasoningReplay: true},
	{Name: "stepfun", DisplayName: "StepFun", Keywords: []string{"stepfun", "step-"}, EnvKey: "STEPFUN_API_KEY",
		DefaultAPIBase: "https://api.stepfun.com/v1", Backend: BackendOpenAICompat, StripModelPrefix: true},
	{Name: "xiaomi_mimo", DisplayName: "Xiaomi MiMo", Keywords: []string{"xiaomi_mimo", "mimo"}, EnvKey: "XIAOMIMIMO_API_KEY",
		DefaultAPIBase: "https://api.xiaomimimo.com/v1", Backend: BackendOpenAICompat, StripModelPrefix: true},
	{Name: "longcat", DisplayName: "LongCat", Keywords: []string{"longcat"}, EnvKey: "LONGCAT_API_KEY",
		DefaultAPIBase: "https://api.longcat.chat/openai/v1", Backend: BackendOpenAICompat, StripModelPrefix: true},
	{Name: "ant_ling", DisplayName: "Ant Ling", Keywords: []string{"ant_ling", "ant-ling", "ling-", "ring-"}, EnvKey: "ANT_LING_API_KEY",
		DefaultAPIBase: "https://api.ant-ling.com/v1", Backend: BackendOpenAICompat, StripModelPrefix: true},
	{Name: "qianfan", DisplayName: "Baidu Qianfan", Keywords: []string{"qianfan", "ernie"}, EnvKey: "QIANFAN_API_KEY",
		DefaultAPIBase: "https://qianfan.baidubce.com/v2", Backend: BackendOpenAICompat, StripModelPrefix: true},
	{Name: "nvidia", DisplayName: "NVIDIA NIM", Keywords: []string{"nvidia", "nemotron"}, EnvKey: "NVIDIA_NIM_API_KEY",
		DefaultAPIBase: "https://integrate.api.nvidia.com/v1", Backend: BackendOpenAICompat, StripModelPrefix: true},
	// xAI's API with an API key; nanobot's providers.xaiGrok with an apiKey
	// is read as this one (see xai-grok's KeyedAs).
	{Name: "xai", DisplayName: "xAI (Grok)", Keywords: []string{"xai", "grok"}, EnvKey: "XAI_API_KEY",
		DefaultAPIBase: "https://api.x.ai/v1", Backend: BackendOpenAICompat, StripModelPrefix: true},

	{Name: "github-copilot", DisplayName: "GitHub Copilot (sign-in)", Keywords: []string{"copilot"},
		DefaultAPIBase: "https://api.githubcopilot.com", Backend: BackendOpenAICompat, StripModelPrefix: true,
		SignIn: true, NoReasoningReplay: true},
	{Name: "openai-codex", DisplayName: "OpenAI Codex (ChatGPT sign-in)", Keywords: []string{"codex"},
		DefaultAPIBase: "https://chatgpt.com/backend-api/codex", Backend: BackendOpenAIResponses, StripModelPrefix: true,
		SignIn: true, NoReasoningReplay: true},
	// nanobot's xai_grok: a Grok subscription (X Premium, SuperGrok) signed
	// in with `nanobot provider login xai-grok`, on xAI's subscription
	// proxy, which speaks the Responses API (providers/backends' xaiGrok).
	{Name: "xai-grok", DisplayName: "xAI Grok (subscription sign-in)", Keywords: []string{"xai-grok", "xai_grok", "grok"},
		DefaultAPIBase: "https://cli-chat-proxy.grok.com/v1", Backend: BackendOpenAIResponses, StripModelPrefix: true,
		SignIn: true, NoReasoningReplay: true, KeyedAs: "xai"},

	{Name: "vllm", DisplayName: "vLLM", Keywords: []string{"vllm"}, EnvKey: "HOSTED_VLLM_API_KEY",
		Backend: BackendOpenAICompat, IsLocal: true, KeyOptional: true, StripModelPrefix: true},
	{Name: "ollama", DisplayName: "Ollama", Keywords: []string{"ollama"}, EnvKey: "OLLAMA_API_KEY",
		DefaultAPIBase: "http://localhost:11434/v1", Backend: BackendOpenAICompat, IsLocal: true, KeyOptional: true, StripModelPrefix: true},
	{Name: "lmstudio", DisplayName: "LM Studio", Keywords: []string{"lmstudio", "lm-studio"}, EnvKey: "LMSTUDIO_API_KEY",
		DefaultAPIBase: "http://localhost:1234/v1", Backend: BackendOpenAICompat, IsLocal: true, KeyOptional: true, StripModelPrefix: true},

	{Name: "atomic_chat", DisplayName: "Atomic Chat", Keywords: []string{"atomic-chat", "atomic_chat", "atomicchat"}, EnvKey: "ATOMIC_CHAT_API_KEY",
		DefaultAPIBase: "http://localhost:1337/v1", Backend: BackendOpenAICompat, IsLocal: true, KeyOptional: true, StripModelPrefix: true},
	{Name: "ovms", DisplayName: "OpenVINO Model Server", Keywords: []string{"ovms", "openvino"},
		DefaultAPIBase: "http://localhost:8000/v3", Backend: BackendOpenAICompat, IsLocal: true, KeyOptional: true, StripModelPrefix: true},

	{Name: "custom", DisplayName: "Custom OpenAI-compatible endpoint", EnvKey: "CUSTOM_API_KEY",
		Backend: BackendOpenAICompat, IsDirect: true, KeyOptional: true, StripModelPrefix: true},
	{Name: "azure_openai", DisplayName: "Azure OpenAI", Keywords: []string{"azure"}, EnvKey: "AZURE_OPENAI_API_KEY",
		Backend: BackendAzureOpenAI, IsDirect: true, StripModelPrefix: true, NoReasoningReplay: true, MaxCompletionTokens: true, EntraID: true},
}

// aliases are other names of a registry entry (flat: lower case, no
// separators), as nanobot's configs write them.
var aliases = map[string]string{
	"opencodezen": "opencode", // nanobot's older name for OpenCode Zen
}

// Specs returns a copy of the registry in matching order.
func Specs() []ProviderSpec {
	out := make([]ProviderSpec, len(specs))
	copy(out, specs)
	return out
}

// Lookup finds a spec by name, tolerating case, "-" and camelCase:
// "azure-openai", "azureOpenai" and "azure_openai" are one provider, and
// "lm_studio" finds "lmstudio".
func Lookup(name string) (ProviderSpec, bool) {
	key := strings.ReplaceAll(normalizeName(name), "_", "")
	if to, ok := aliases[key]; ok {
		key = to
	}
	for _, s := range specs {
		if strings.ReplaceAll(normalizeName(s.Name), "_", "") == key {
			return s, true
		}
	}
	return ProviderSpec{}, false
}

func normalizeName(s string) string {
	s = strings.TrimSpace(s)
	b := make([]byte, 0, len(s)+2)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			if i > 0 && s[i-1] >= 'a' && s[i-1] <= 'z' {
				b = append(b, '_')
			}
			b = append(b, c+'a'-'A')
		case c == '-' || c == ' ':
			b = append(b, '_')
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// configured reports whether the provider can be called with these
// settings: a key, or for KeyOptional providers an apiBase; and an endpoint.
func configured(spec ProviderSpec, st Settings) bool {
	if spec.AWSCredentials {
		return st.Region != "" || st.Profile != "" || st.APIKey != "" || st.APIBase != ""
	}
	if spec.DefaultAPIBase == "" && st.APIBase == "" {
		return false
	}
	if spec.SignIn {
		return st.SignedIn
	}
	return st.APIKey != "" || ((spec.KeyOptional || spec.EntraID) && st.APIBase != "")
}

// howToConfigure says what the config lacks for a provider.
func howToConfigure(spec ProviderSpec) string {
	switch {
	case spec.SignIn && spec.KeyedAs != "":
		return fmt.Sprintf("run `nanobot provider login %s`, or set providers.%s.apiKey to use provider %s with that key", spec.Name, spec.Name, spec.KeyedAs)
	case spec.SignIn:
		return fmt.Sprintf("run `nanobot provider login %s`", spec.Name)
	case spec.AWSCredentials:
		return fmt.Sprintf("set providers.%s.region (and profile, or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY in the environment)", spec.Name)
	case spec.Backend == BackendAzureOpenAI:
		return fmt.Sprintf("set providers.%s.apiBase (https://NAME.openai.azure.com), and apiKey unless it signs in with Entra ID (docs/providers.md)", spec.Name)
	case spec.IsDirect || spec.IsLocal && spec.DefaultAPIBase == "":
		return fmt.Sprintf("set providers.%s.apiBase (and apiKey if the endpoint needs one)", spec.Name)
	case spec.EnvKey != "":
		return fmt.Sprintf("set providers.%s.apiKey (for example \"${%s}\")", spec.Name, spec.EnvKey)
	default:
		return fmt.Sprintf("set providers.%s.apiKey", spec.Name)
	}
}

func knownNames() string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}
