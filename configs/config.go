// Package configs owns the user's config.json: the typed configuration
// structs (one per section, camelCase JSON keys in the shape nanobot users
// already have), their defaults, loading in layers (defaults -> file ->
// NANOBOT_ environment -> command-line overrides) with koanf, ${VAR}
// expansion, migration of older key locations, validation with errors that
// name the JSON path, atomic 0600 saves, and the paths every other folder
// derives from the config file's location.
//
// Components do not read this package's structs at run time more than once:
// cmd converts the loaded Config into each component's own options.
package configs

import (
	"strings"
	"time"
)

// Config is the root of config.json.
type Config struct {
	// Agents holds the agent settings.
	Agents AgentsConfig `json:"agents"`
	// Providers maps a provider name (openrouter, anthropic, deepseek, ollama,
	// or any custom name) to its credentials and endpoint.
	Providers map[string]ProviderConfig `json:"providers"`
	// Channels configures the chat platforms.
	Channels ChannelsConfig `json:"channels"`
	// Gateway configures the daemon's HTTP server and heartbeat.
	Gateway GatewayConfig `json:"gateway"`
	// API is the OpenAI-compatible API under /v1 (docs/api.md).
	API APIConfig `json:"api"`
	// Tools configures what the agent may do.
	Tools ToolsConfig `json:"tools"`
	// TTS configures voice replies (text-to-speech); see docs/providers.md.
	TTS TTSConfig `json:"tts"`
	// Log configures logging.
	Log LogConfig `json:"log"`
	// Cluster runs the bot on several machines over NATS JetStream
	// (optional; see docs/cluster.md).
	Cluster ClusterConfig `json:"cluster"`
	// ModelPresets are named models with their settings, picked by
	// agents.*.modelPreset, bindings, fallbackModels and /model
	// (docs/agents.md).
	ModelPresets map[string]ModelPreset `json:"modelPresets"`
	// Bindings route messages to agents; first match wins, the default
	// agent otherwise.
	Bindings []Binding `json:"bindings"`
	// IdentityLinks name a person's accounts on several platforms
	// ("alice": ["telegram:123", "slack:U9"]), for sessionScope
	// "per-identity".
	IdentityLinks map[string][]string `json:"identityLinks"`
	// Limits are usage budgets per sender, chat, agent and instance
	// (docs/usage.md).
	Limits LimitsConfig `json:"limits,omitzero"`
	// Transcription turns voice notes and audio files on every channel
	// into text before the agent reads them (docs/configuration.md).
	Transcription TranscriptionConfig `json:"transcription"`
	// Hooks are external programs and HTTP endpoints asked at points of
	// the agent's work, which may observe, modify or veto (docs/hooks.md).
	Hooks []HookConfig `json:"hooks,omitempty"`
	// Skills configures where skills are installed from (docs/skills.md).
	Skills SkillsConfig `json:"skills,omitzero"`
}

// TranscriptionConfig picks the speech-to-text service by provider name,
// the way the Python nanobot does: the key and endpoint come from
// providers.<provider> (see TranscriptionService).
type TranscriptionConfig struct {
	// Enabled turns transcription on (default true when a provider is set).
	Enabled *bool `json:"enabled,omitempty"`
	// Provider names the service: groq, openai, openrouter, xiaomi_mimo
	// (mimo, xiaomi), stepfun, assemblyai, siliconflow (silicon), or
	// another providers entry whose apiBase is a Whisper-compatible
	// server.
	Provider string `json:"provider,omitempty"`
	// Model is the speech model (default: the service's own, see
	// docs/configuration.md; whisper-1 on other servers).
	Model string `json:"model,omitempty"`
	// Language is the spoken language as an ISO 639 code ("de", "zh"),
	// sent as a hint; empty lets the service detect it.
	Language string `json:"language,omitempty"`
}

// MemoryConfig is agents.defaults.memory: how memory_search ranks.
type MemoryConfig struct {
	// EmbeddingModel, when set, makes memory_search hybrid: each message
	// and memory entry is embedded with this model, provider-prefixed as
	// the chat model may be ("openai/text-embedding-3-small"), through
	// the provider's OpenAI-compatible /embeddings. Unset: words only.
	EmbeddingModel string `json:"embeddingModel,omitempty"`
	// EmbeddingProvider forces the provider of the embedding model.
	EmbeddingProvider string `json:"embeddingProvider,omitempty"`
	// EmbeddingDimensions asks a model that can shorten its vectors
	// (text-embedding-3) for this many, which shrinks the index (0: the
	// model's own length).
	EmbeddingDimensions int `json:"embeddingDimensions,omitempty"`
}

// DreamConfig is agents.defaults.dream.
type DreamConfig struct {
	// Enabled runs a dream every IntervalH hours (default off).
	Enabled bool `json:"enabled"`
	// IntervalH is the hours between dreams (default 24).
	IntervalH int `json:"intervalH,omitempty"`
}

// Every is the time between scheduled dreams, or 0 when they are off.
func (d DreamConfig) Every() time.Duration {
	if !d.Enabled {
		return 0
	}
	h := d.IntervalH
	if h <= 0 {
		h = 24
	}
	return time.Duration(h) * time.Hour
}

// AgentsConfig holds the agents: the default agent (defaults) and more
// agents in List or as agents.<name> objects (docs/agents.md).
type AgentsConfig struct {
	// Defaults is the default agent, and what other agents inherit.
	Defaults AgentDefaults `json:"defaults"`
	// List are more agents.
	List []AgentProfile `json:"list"`
	// Named are more agents written as agents.<name> objects.
	Named map[string]AgentProfile `json:"-"`
}

// AgentDefaults are the agent's model and loop settings.
type AgentDefaults struct {
	// Workspace is the agent's working folder (bootstrap files, memory,
	// skills, files it writes). "~" expands to the home folder; a relative
	// path is relative to the config file's folder. Default: "workspace"
	// beside config.json.
	Workspace string `json:"workspace"`
	// Model is the model name, optionally prefixed by a provider
	// ("openrouter/anthropic/claude-sonnet-4.5", "deepseek-chat").
	Model string `json:"model"`
	// Provider forces a provider by name; "auto" matches one from the model
	// name and the configured keys.
	Provider string `json:"provider"`
	// FallbackModels are tried in order when the primary model fails after
	// retries: preset names, model names or inline objects {provider,
	// model, maxTokens, ...}.
	FallbackModels []FallbackModel `json:"fallbackModels"`
	// ModelPreset names a modelPresets entry; it wins over Model, Provider
	// and the per-model settings.
	ModelPreset string `json:"modelPreset"`
	// Presets are the modelPresets a user may switch to with /model
	// (unset: all of them; [] none).
	Presets []string `json:"presets"`
	// Tools narrows the tools the agent offers (allow / deny by name).
	Tools ToolPolicy `json:"tools"`
	// SessionScope is "per-chat" (one conversation per chat),
	// "per-identity" (a person in identityLinks has one conversation
	// across the platforms of their direct chats) or "shared" (every
	// direct message in one conversation).
	SessionScope string `json:"sessionScope"`
	// MaxRepliesPerMinute caps the messages answered per chat and minute,
	// so two bots cannot talk forever (0: no cap).
	MaxRepliesPerMinute int `json:"maxRepliesPerMinute"`
	// AllowBotMessages answers messages other bots sent (default false:
	// they are ignored).
	AllowBotMessages bool `json:"allowBotMessages"`
	// Queue says what happens to a message that arrives while its chat's
	// turn is running: "queue", "steer", "collect" or "interrupt", for
	// direct and group chats (default steer and collect).
	Queue QueueConfig `json:"queue"`
	// MaxTokens caps the tokens of one reply.
	MaxTokens int `json:"maxTokens"`
	// ContextWindowTokens is the model's context window; memory
	// consolidation keeps prompts inside it.
	ContextWindowTokens int `json:"contextWindowTokens"`
	// Temperature is the sampling temperature (0-2).
	Temperature float64 `json:"temperature"`
	// MaxToolIterations caps LLM<->tool round trips in one turn; at the cap
	// the model is asked for a final answer without tools.
	MaxToolIterations int `json:"maxToolIterations"`
	// Timezone is the IANA timezone shown to the model and used by cron
	// ("" = the machine's local zone).
	Timezone string `json:"timezone"`
	// ReasoningEffort asks reasoning models to think more or less: "",
	// "low", "medium" or "high" ("" = the provider's default).
	ReasoningEffort string `json:"reasoningEffort"`
	// MaxConcurrentTurns caps LLM turns running at once across all sessions.
	MaxConcurrentTurns int `json:"maxConcurrentTurns"`
	// MaxToolResultChars truncates a stored tool result beyond this size
	// (head and tail kept).
	MaxToolResultChars int `json:"maxToolResultChars"`
	// IdleCompactAfterMinutes folds a conversation nobody wrote to for
	// this long into memory in the background, as /compact does (0: never,
	// the default).
	IdleCompactAfterMinutes int `json:"idleCompactAfterMinutes,omitempty"`
	// IdleCompactCheckIntervalSeconds is how often idle conversations are
	// looked for (default 60).
	IdleCompactCheckIntervalSeconds int `json:"idleCompactCheckIntervalSeconds,omitempty"`
	// SessionTTLMinutes starts a new conversation when the next message
	// comes after the chat rested this long; the old one is archived to
	// memory as with /new (0: never, the default).
	SessionTTLMinutes int `json:"sessionTtlMinutes,omitempty"`
	// Dream tidies long-term memory on a schedule (nanobot's dream):
	// duplicates merged, outdated facts updated, each rewrite kept as a
	// version (/dream-log, /dream-restore).
	Dream DreamConfig `json:"dream"`
	// Memory configures memory_search (docs/memory.md).
	Memory MemoryConfig `json:"memory,omitzero"`
	// MaxConcurrentSubagents caps sub-agents running at once.
	MaxConcurrentSubagents int `json:"maxConcurrentSubagents"`
	// RequestTimeoutS is the per-request timeout of one LLM call.
	RequestTimeoutS int `json:"requestTimeoutS"`
	// StreamIdleTimeoutS aborts a streamed reply that sends nothing for this
	// long.
	StreamIdleTimeoutS int `json:"streamIdleTimeoutS"`
	// DisabledSkills are skills left out of the prompt, by name (nanobot's
	// key); /skill disable and /skill enable edit this list.
	DisabledSkills []string `json:"disabledSkills,omitempty"`
	// Skills, when set, are the only skills the agent uses (unset: all).
	Skills []string `json:"skills,omitempty"`
}

// ProviderConfig is one LLM provider's credentials and endpoint.
type ProviderConfig struct {
	// APIKey is the provider's key. Use "${ENV_VAR}" to keep it out of the
	// file.
	APIKey string `json:"apiKey"`
	// APIBase overrides the provider's endpoint (required for local and
	// custom providers).
	APIBase string `json:"apiBase"`
	// ExtraHeaders are sent with every request.
	ExtraHeaders map[string]string `json:"extraHeaders"`
	// APIVersion is the api-version of Azure OpenAI.
	APIVersion string `json:"apiVersion,omitempty"`
	// API selects the wire API of an OpenAI-compatible provider: "chat"
	// (chat completions, the default) or "responses" (OpenAI's Responses
	// API, with reasoning carried between turns).
	API string `json:"api,omitempty"`
	// APIType is the Python nanobot's spelling of API; API wins when both
	// are set.
	APIType string `json:"apiType,omitempty"`
	// Prices override the built-in price table for this provider's models
	// (model name -> US dollars per million tokens); see docs/usage.md.
	Prices map[string]ModelPrice `json:"prices,omitempty"`
	// ExtraBody is merged into every request body, top-level keys
	// replacing what nanobot would send (e.g. {"enable_thinking": false}).
	ExtraBody map[string]any `json:"extraBody,omitempty"`
	// Proxy is an http://, https:// or socks5:// proxy for this provider's
	// requests (empty: the environment's HTTPS_PROXY, if any).
	Proxy string `json:"proxy,omitempty"`
	// TextToolCalls: tool calls a model writes as text (<tool_call>,
	// <|python_tag|>, [TOOL_CALLS], a bare JSON call) become real tool
	// calls (default true); false keeps them as the answer's text.
	TextToolCalls *bool `json:"textToolCalls,omitempty"`
	// ThinkingStyle is how a custom endpoint switches reasoning on:
	// "thinking_type", "enable_thinking" or "reasoning_split"; the agent's
	// reasoningEffort ("none" = off) sets it. extraBody still wins.
	ThinkingStyle string `json:"thinkingStyle,omitempty"`
	// RateLimit holds calls to this provider back to rpm / tpm
	// (docs/usage.md); nil: only the vendor's rate-limit headers.
	RateLimit *RateLimitConfig `json:"rateLimit,omitempty"`
	// Region is the AWS region of the bedrock provider (us-east-1, ...);
	// empty: AWS_REGION, AWS_DEFAULT_REGION, then the profile's region.
	Region string `json:"region,omitempty"`
	// Profile is the AWS shared config/credentials profile of the bedrock
	// provider; empty: AWS_PROFILE, then "default".
	Profile string `json:"profile,omitempty"`
	// SignIn overrides the sign-in endpoints of the subscription providers
	// (github-copilot, openai-codex, xai-grok): GitHub Enterprise hosts,
	// test fakes.
	SignIn *SignInConfig `json:"signIn,omitempty"`
}

// SignInConfig is where a subscription provider signs in; empty fields
// take the public defaults (see docs/providers.md).
type SignInConfig struct {
	// AuthBase is the authorization server (https://github.com,
	// https://auth.openai.com; for xai-grok the OpenID Connect issuer,
	// https://auth.x.ai).
	AuthBase string `json:"authBase,omitempty"`
	// ExchangeBase is where the GitHub token becomes a Copilot token
	// (https://api.github.com; github-copilot only).
	ExchangeBase string `json:"exchangeBase,omitempty"`
	// ClientID is the OAuth client id (default: the public editor client).
	ClientID string `json:"clientId,omitempty"`
	// RedirectPort is the loopback port of the browser sign-in
	// (openai-codex: default 1455; xai-grok: default a free port).
	RedirectPort int `json:"redirectPort,omitempty"`
}

// WireAPI is the API the provider is switched to ("" = chat), from api or
// apiType, normalised ("chat_completions" and "completions" mean chat).
func (p ProviderConfig) WireAPI() string {
	api := p.API
	if api == "" {
		api = p.APIType
	}
	switch a := strings.ToLower(strings.TrimSpace(api)); a {
	case "auto", "chat_completions", "chat-completions", "completions", "openai":
		return "chat"
	default:
		return a
	}
}

// TTSConfig configures voice replies: answers to voice notes (and in
// chats with /voice on) are also sent as voice messages.
type TTSConfig struct {
	// Enabled turns voice replies on.
	Enabled bool `json:"enabled"`
	// Provider names the providers.<name> entry whose apiKey and apiBase
	// reach an OpenAI-compatible /audio/speech endpoint (default "openai").
	Provider string `json:"provider"`
	// APIBase and APIKey override the provider's (a dedicated speech
	// server).
	APIBase string `json:"apiBase,omitempty"`
	APIKey  string `json:"apiKey,omitempty"`
	// Model is the speech model (default "gpt-4o-mini-tts"; "tts-1" is
	// cheaper).
	Model string `json:"model"`
	// Voice is the voice name (default "alloy").
	Voice string `json:"voice"`
	// Format is what the server is asked for: "opus" (default; Ogg/Opus,
	// sent as is) or "mp3", "wav", "aac", "flac" (converted with ffmpeg).
	Format string `json:"format"`
	// Instructions steer the voice ("speak calmly"), for models that take them.
	Instructions string `json:"instructions,omitempty"`
	// MaxChars cuts longer answers before they are spoken (default 4000).
	MaxChars int `json:"maxChars,omitempty"`
}

// ModelPrice is what one model costs, in US dollars per million tokens.
type ModelPrice struct {
	// Input is the price of prompt tokens (required).
	Input *float64 `json:"input"`
	// CachedInput is the price of prompt tokens read from the cache
	// (default: Input).
	CachedInput *float64 `json:"cachedInput,omitempty"`
	// CacheWrite is the price of prompt tokens written to the cache
	// (default: Input).
	CacheWrite *float64 `json:"cacheWrite,omitempty"`
	// Output is the price of completion tokens, reasoning included
	// (required).
	Output *float64 `json:"output"`
}

// GatewayConfig configures the daemon.
type GatewayConfig struct {
	// Host is the HTTP server's bind address. Keep it on loopback unless a
	// reverse proxy with TLS is in front.
	Host string `json:"host"`
	// Port is the HTTP server's port (health, metrics, web chat).
	Port int `json:"port"`
	// AllowedHosts are the extra host names (no scheme or port) the HTTP
	// server answers to, checked against each request's Host header to
	// stop DNS rebinding. On a loopback bind only loopback names
	// (localhost, *.localhost, 127.0.0.0/8, ::1) are served unless listed
	// here: add the public name when a reverse proxy forwards it. On other
	// binds an empty list serves every name; a non-empty one serves
	// loopback names, IP literals and the list. "*.example.com" matches
	// subdomains; "*" alone switches the check off. Default: none.
	AllowedHosts []string `json:"allowedHosts"`
	// Heartbeat periodically wakes the agent to check HEARTBEAT.md.
	Heartbeat HeartbeatConfig `json:"heartbeat"`
	// Pprof serves Go's runtime profiles (heap, goroutines, CPU) under
	// /debug/pprof/ to loopback clients, for diagnosing memory or CPU use.
	// Heap sampling is off until it is on (internal/memprof).
	Pprof bool `json:"pprof"`
	// WebUI is the web workbench served at / (see docs/webui.md).
	WebUI WebUIConfig `json:"webui"`
	// TrimCodePages unmaps the executable's read-only pages from the process
	// 30 s after each busy spell (start-up included), so idle RSS counts only
	// what is used again; they fault back from the page cache when needed.
	// Set false to measure what the gateway touches without it. Default true.
	TrimCodePages bool `json:"trimCodePages"`
}

// WebUIConfig configures the web workbench.
type WebUIConfig struct {
	// Password is the bcrypt hash of the workbench password (written by
	// `nanobot webui set-password`, never the password itself). Browsers
	// on this machine (a loopback bind) need none; beyond loopback the
	// gateway refuses to start the workbench without it. Default: none.
	Password string `json:"password"`
}

// HeartbeatConfig configures the heartbeat service.
type HeartbeatConfig struct {
	// Enabled turns the heartbeat on.
	Enabled bool `json:"enabled"`
	// IntervalS is the time between heartbeats in seconds.
	IntervalS int `json:"intervalS"`
}

// ToolsConfig configures the agent's tools.
type ToolsConfig struct {
	// RestrictToWorkspace keeps file and shell tools inside the workspace.
	RestrictToWorkspace bool `json:"restrictToWorkspace"`
	// Exec configures the shell tool.
	Exec ExecConfig `json:"exec"`
	// Web configures web search and fetch.
	Web WebConfig `json:"web"`
	// Message configures the message tool.
	Message MessageToolConfig `json:"message"`
	// MCPServers maps a server name to an MCP server connection.
	MCPServers map[string]MCPServerConfig `json:"mcpServers"`
	// SSRFAllowlist lists CIDRs web_fetch and the browser may reach although they are
	// private (for example your LAN, "192.168.1.0/24").
	SSRFAllowlist []string `json:"ssrfAllowlist"`
	// Disabled lists tool names not offered to the model.
	Disabled []string `json:"disabled"`
	// Image configures the generate_image tool.
	Image ImageToolConfig `json:"image"`
	// Browser configures the browser tool (headless Chromium).
	Browser BrowserToolConfig `json:"browser"`
}

// BrowserToolConfig configures the browser tool. It is offered when
// enabled and a Chromium is found (executablePath, else PATH); `nanobot
// doctor` says which. It keeps to tools.ssrfAllowlist like web_fetch.
type BrowserToolConfig struct {
	// Enable offers the tool when Chromium is found (default true).
	Enable bool `json:"enable"`
	// Headless runs Chromium without a window (default true; false needs
	// a display).
	Headless bool `json:"headless"`
	// IdleTimeoutMinutes closes a conversation's tab unused this long, and
	// Chromium after as long without tabs (default 10).
	IdleTimeoutMinutes int `json:"idleTimeoutMinutes"`
	// MaxTabs caps the open tabs, one per conversation; the least recently
	// used idle one makes room (default 4).
	MaxTabs int `json:"maxTabs"`
	// ExecutablePath is the Chromium to run; empty looks on PATH for
	// chromium, chromium-browser, google-chrome(-stable), headless-shell.
	ExecutablePath string `json:"executablePath,omitempty"`
	// Approval asks an admin before the browser acts: "off" (default),
	// "risky" (before submitting a form) or "always" (before navigate,
	// click, type and pdf). The wait is tools.exec.approvalTimeout.
	Approval string `json:"approval"`
}

// ImageToolConfig configures generate_image (OpenAI-compatible
// /images/generations, Gemini's generateContent/predict, OpenRouter's
// image output; see docs/providers.md).
type ImageToolConfig struct {
	// Enabled offers the tool to the model.
	Enabled bool `json:"enabled"`
	// Provider names the providers.<name> entry whose apiKey and apiBase
	// are used, and picks the wire format: gemini, openrouter, else
	// OpenAI's (default "openai", or the prefix of a "<provider>/<model>").
	Provider string `json:"provider"`
	// APIBase and APIKey override the provider's.
	APIBase string `json:"apiBase,omitempty"`
	APIKey  string `json:"apiKey,omitempty"`
	// Model is the image model (default "gpt-image-1"; "dall-e-3";
	// required for gemini and openrouter: "gemini-2.5-flash-image").
	Model string `json:"model"`
	// PricePerImage is the cost of one image in US dollars for the usage
	// ledger; 0 uses the built-in prices of OpenAI's models.
	PricePerImage float64 `json:"pricePerImage,omitempty"`
}

// Endpoint is the apiBase and apiKey of a provider entry, name matched
// as written or in its normalised form ("openai", "OpenAI"); empty when
// the config has no such entry.
func (c *Config) Endpoint(name string) (apiBase, apiKey string) {
	p, _ := c.provider(name)
	return p.APIBase, p.APIKey
}

// provider is the providers entry for name, matched as Endpoint matches.
func (c *Config) provider(name string) (ProviderConfig, bool) {
	fold := strings.NewReplacer("-", "", "_", "")
	for key, p := range c.Providers {
		if strings.EqualFold(key, name) || strings.EqualFold(fold.Replace(key), fold.Replace(name)) {
			return p, true
		}
	}
	return ProviderConfig{}, false
}

// MessageToolConfig configures the message tool.
type MessageToolConfig struct {
	// AllowAnyTarget lets the agent message any channel and chat id. By
	// default (false) it reaches only the current chat and chats allowed
	// on their channel (allowFrom or an approved pairing), so a prompt
	// injection cannot make it write to strangers.
	AllowAnyTarget bool `json:"allowAnyTarget"`
}

// ExecConfig configures the exec (shell) tool.
type ExecConfig struct {
	// Enable offers the exec tool to the model.
	Enable bool `json:"enable"`
	// Timeout is the default per-command timeout in seconds (at most 600).
	Timeout int `json:"timeout"`
	// DenyPatterns are extra regular expressions of commands to refuse.
	DenyPatterns []string `json:"denyPatterns"`
	// AllowPatterns are regular expressions that override a deny match.
	AllowPatterns []string `json:"allowPatterns"`
	// Sandbox confines commands: "auto" (the strongest available),
	// "landlock", "bwrap" or "none".
	Sandbox string `json:"sandbox"`
	// AllowedEnvKeys are environment variables passed to commands in
	// addition to a safe set.
	AllowedEnvKeys []string `json:"allowedEnvKeys"`
	// AllowPaths widens the sandbox: folders confined commands (and MCP
	// stdio servers) may read, or read and write, besides the workspace.
	AllowPaths AllowPathsConfig `json:"allowPaths"`
	// Network lets confined commands use the network (default true; false
	// gives them a network namespace of their own where user namespaces
	// work or under bwrap, and otherwise needs Landlock ABI 4, Linux 6.7).
	Network *bool `json:"network"`
	// AllowUnixSockets lets confined commands (and MCP stdio servers)
	// create UNIX sockets, and so talk to local daemons through theirs
	// (PostgreSQL, Docker, D-Bus, nscd, syslog). Default false: a seccomp
	// filter refuses them, because a pathname socket is reachable from
	// anywhere its file can be named. Under bwrap the socket's folder must
	// also be in allowPaths.
	AllowUnixSockets bool `json:"allowUnixSockets"`
	// Limits are resource limits of confined commands.
	Limits ExecLimits `json:"limits"`
	// Approval asks an admin before commands run: "off" (default), "risky"
	// (network, installs, privileges, deletes and writes outside the
	// workspace, pipes into a shell) or "always".
	Approval string `json:"approval"`
	// ApprovedCommands are regular expressions over the whole command line
	// that run without asking; "Always allow" appends the exact command.
	ApprovedCommands []string `json:"approvedCommands"`
	// ApprovalTimeout is how long a request waits for an answer, in
	// seconds (default 300); no answer means no.
	ApprovalTimeout int `json:"approvalTimeout"`
	// Sessions configures long-running commands: exec with yield_time_ms,
	// write_stdin and list_exec_sessions.
	Sessions ExecSessionsConfig `json:"sessions"`
}

// ExecSessionsConfig configures exec sessions: commands exec starts with
// yield_time_ms in a pseudo-terminal, kept running across tool calls for
// write_stdin to type into and poll. They go through exec's guards and
// sandbox; each belongs to the conversation that started it.
type ExecSessionsConfig struct {
	// Enable offers sessions when exec is enabled (default true; Unix
	// only).
	Enable bool `json:"enable"`
	// MaxSessions caps the sessions alive at once on the gateway, across
	// conversations and agents (default 8, at most 64).
	MaxSessions int `json:"maxSessions"`
	// IdleTimeoutMinutes kills a session no write_stdin has touched for
	// this long (default 30).
	IdleTimeoutMinutes int `json:"idleTimeoutMinutes"`
	// MaxLifetimeMinutes kills a session this long after it started,
	// however busy (default 240); exec's timeout argument may shorten it.
	MaxLifetimeMinutes int `json:"maxLifetimeMinutes"`
	// MaxOutputChars is how much unread output a session keeps between
	// polls, its first and most recent halves (default 50000), and the
	// most one poll may return.
	MaxOutputChars int `json:"maxOutputChars"`
}

// AllowPathsConfig lists extra folders for the sandbox.
type AllowPathsConfig struct {
	ReadOnly  []string `json:"readOnly"`
	ReadWrite []string `json:"readWrite"`
}

// ExecLimits are per-command resource limits (0 = the default, -1 = none).
type ExecLimits struct {
	// CPUSeconds is CPU time (default 600).
	CPUSeconds int64 `json:"cpuSeconds"`
	// MemoryMB is address space (default 8192).
	MemoryMB int64 `json:"memoryMb"`
	// Processes caps a command's process tree (default 512).
	Processes int64 `json:"processes"`
	// FileSizeMB caps one written file (default 1024).
	FileSizeMB int64 `json:"fileSizeMb"`
}

// NetworkAllowed reports whether confined commands may use the network.
func (e ExecConfig) NetworkAllowed() bool { return e.Network == nil || *e.Network }

// WebConfig configures the web tools.
type WebConfig struct {
	// Enable offers web_search and web_fetch to the model (default true).
	Enable *bool `json:"enable,omitempty"`
	// Proxy is an HTTP(S) proxy URL for web requests.
	Proxy string `json:"proxy"`
	// UserAgent overrides the User-Agent header of web requests.
	UserAgent string `json:"userAgent,omitempty"`
	// Search configures web_search.
	Search WebSearchConfig `json:"search"`
	// Fetch configures web_fetch.
	Fetch WebFetchConfig `json:"fetch"`
}

// WebSearchConfig configures web_search.
type WebSearchConfig struct {
	// Provider is "duckduckgo" (no key), "searxng" (baseUrl), "keenable"
	// (key optional), or a keyed API: "exa", "brave", "tavily", "jina", "kagi",
	// "olostep", "bocha", "volcengine", "serper".
	Provider string `json:"provider"`
	// APIKey is the search provider's key.
	APIKey string `json:"apiKey"`
	// BaseURL overrides the search endpoint (required for searxng).
	BaseURL string `json:"baseUrl"`
	// MaxResults is the default number of results (1-10).
	MaxResults int `json:"maxResults"`
	// Timeout bounds one search in seconds (default 20).
	Timeout int `json:"timeout,omitempty"`
}

// WebFetchConfig configures web_fetch.
type WebFetchConfig struct {
	// MaxChars caps the text returned by one fetch.
	MaxChars int `json:"maxChars"`
}

// WebEnabled reports whether the web tools are offered.
func (w WebConfig) WebEnabled() bool { return w.Enable == nil || *w.Enable }

// MCPServerConfig is one MCP server connection.
type MCPServerConfig struct {
	// Type is "stdio", "sse" or "streamableHttp"; inferred from command/url
	// when empty.
	Type string `json:"type"`
	// Command starts a stdio server (e.g. "npx").
	Command string `json:"command"`
	// Args are the stdio command's arguments.
	Args []string `json:"args"`
	// Env adds environment variables for a stdio server.
	Env map[string]string `json:"env"`
	// Cwd is the stdio server's working folder.
	Cwd string `json:"cwd"`
	// Sandbox overrides tools.exec.sandbox for this stdio server ("" =
	// the same; "none" runs it unconfined).
	Sandbox string `json:"sandbox"`
	// AllowUnixSockets overrides tools.exec.allowUnixSockets for this
	// stdio server (unset = the same), e.g. true for a server that talks
	// to a database or Docker through its socket.
	AllowUnixSockets *bool `json:"allowUnixSockets,omitempty"`
	// URL is the endpoint of an sse or streamableHttp server.
	URL string `json:"url"`
	// Headers are sent to an HTTP server.
	Headers map[string]string `json:"headers"`
	// Auth is "oauth" for an HTTP server that needs an OAuth sign-in
	// (`nanobot mcp login <name>`; tokens in the state folder), or empty.
	Auth string `json:"auth,omitempty"`
	// ToolTimeout is the per-call timeout in seconds.
	ToolTimeout int `json:"toolTimeout"`
	// EnabledTools lists the tools to register: ["*"] for all, [] for none,
	// raw names or mcp_<server>_<tool> names.
	EnabledTools []string `json:"enabledTools"`
}

// LogConfig configures logging. Command-line flags override it.
type LogConfig struct {
	// Level is "debug", "info", "warn" or "error".
	Level string `json:"level"`
	// Format is "text" or "json".
	Format string `json:"format"`
}

// Location is the agent's timezone: Timezone when it names a zone (Validate
// refuses one that does not), the machine's local zone otherwise.
func (d AgentDefaults) Location() *time.Location {
	if d.Timezone != "" {
		if l, err := time.LoadLocation(d.Timezone); err == nil {
			return l
		}
	}
	return time.Local
}
