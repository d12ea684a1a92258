package gateway

import (
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/hooks"
	"github.com/nanobot-go/nanobot/agent/skills/registry"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/cron"
	"github.com/nanobot-go/nanobot/gateway/logging"
	"github.com/nanobot-go/nanobot/gateway/setup"
	"github.com/nanobot-go/nanobot/internal/redact"
	"github.com/nanobot-go/nanobot/internal/wal"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/approval"
	"github.com/nanobot-go/nanobot/tools/mcp"
)

// Options are what cmd hands the gateway: the loaded config and the parts
// it built from it.
type Options struct {
	Config *configs.Config
	Paths  configs.Paths
	// Provider answers the agent (already wrapped in retries/fallbacks).
	Provider providers.Provider
	// Model is the model name sent to Provider.
	Model string
	// BuildModel builds the provider (with fallbacks), the model name and
	// the primary provider's config name of another agent's settings; it never fails (an unusable model
	// answers with setup instructions). Nil: every agent uses Provider.
	BuildModel func(s configs.AgentDefaults) (providers.Provider, string, string)
	// BuildEmbedding builds the embedding model of an agent's settings
	// (memory.embeddingModel) for memory_search, nil when none is set, or
	// says why it cannot. Nil: searches rank by words alone.
	BuildEmbedding func(s configs.AgentDefaults) (*agent.Embedding, error)
	// BuildPreset builds the provider of a model preset, or says why it
	// cannot be used (for /model). Nil: /model offers no presets.
	BuildPreset func(p configs.ModelPreset) (providers.Provider, error)
	// ToolsFor builds the built-in tools of another agent, working in its
	// paths (configs.Paths.ForAgent). Nil: such agents get only message
	// and spawn.
	ToolsFor func(a configs.Agent, paths configs.Paths) (*tools.Registry, error)
	// ProviderName is Provider's config name (providers.<name>): the usage
	// ledger records it and prices by it.
	ProviderName string
	// Speaker speaks final answers as voice messages (tts.enabled); nil:
	// no voice replies.
	Speaker agent.Speaker
	// Transcription turns voice notes and audio files on every channel
	// into text before their turn (the transcription section, and a
	// channel's own); the zero value: none.
	Transcription agent.TranscriptionConfig
	// Observer is told about every provider call and tool execution of
	// every agent, after the gateway's metrics (tracing: Langfuse). Nil:
	// only the metrics. It must not block.
	Observer agent.RunObserver
	// Hooks are the user's hooks (config hooks[]), asked by every agent
	// at its hook points; nil: none.
	Hooks agent.Hooks
	// MCP reports the MCP servers in /api/status (nil: none).
	MCP interface{ Status() []mcp.Status }
	// SkillInstaller installs skills from the registries into the default
	// agent's workspace, for the workbench (nil: it cannot).
	SkillInstaller *registry.Installer
	// Restart is called by an admin's /restart: the caller stops the
	// gateway (cancels Run's context) and starts it again. Nil: /restart
	// says it is not available.
	Restart func(from RestartOrigin)
	// RestartedFrom is the chat that asked for the restart this process
	// comes from: it is told the gateway is back (nil: none).
	RestartedFrom *RestartOrigin
	// Approvals is the broker tools ask the owner through
	// (tools.exec.approval): the gateway posts its requests to the chats,
	// the agents take admins' answers, the workbench lists and answers
	// them. Nil: approval is off.
	Approvals *approval.Broker
	// SwitchSkill saves a /skill enable|disable of agent a in the config
	// and returns a's disabled skills afterwards (nil: not saved, /skill
	// says so).
	SwitchSkill func(a configs.Agent, name string, disabled bool) ([]string, error)
	// Tools are offered to the agent. The gateway adds the tools that need
	// its runtime: message (the bus) and spawn (sub-agents). Nil: only
	// those.
	Tools *tools.Registry
	// Channels builds the enabled channels, the web chat among them (nil:
	// only Extra).
	Channels *channels.Registry
	// Extra are channels built by the caller (tests register fakes here).
	Extra []channels.Channel
	// Listener overrides gateway.host:port (tests pass 127.0.0.1:0).
	Listener net.Listener
	// Early is the listener the caller opened with ListenEarly before
	// building what it passes here, so /healthz answered meanwhile; New
	// takes it over (and closes it if it fails). It overrides Listener.
	Early *Early
	// Ready is called with the HTTP address once the gateway serves.
	Ready func(addr string)
	// DrainTimeout bounds how long running turns may finish on shutdown
	// (default 20 s); unfinished ones are replayed at the next start.
	DrainTimeout time.Duration
	// DeliveryIdle is how long a chat's delivery worker outlives its last
	// message (default relay.DefaultWorkerIdle, 20 s).
	DeliveryIdle time.Duration
	// CronStore overrides the jobs store (default cron/jobs.json).
	CronStore *cron.Store
	// Redact is the process's redactor (the logger's): the channels add the
	// tokens they fetch to it, and the agent's replies are redacted with it.
	// Tool results are redacted by Tools (tools.WithRedactor). Nil: none.
	Redact  *redact.Redactor
	Log     *slog.Logger
	Version string
	// Reload is signalled (SIGHUP) to re-read the config with ReloadConfig
	// and apply what can change live: the allow-lists.
	Reload       <-chan struct{}
	ReloadConfig func() (*configs.Config, error)
	// Stderr receives what the operator reads at start-up: the workbench's
	// address and the platforms' notices. Default os.Stderr.
	Stderr io.Writer
	// SignInLink prints a one-time sign-in link to the workbench on Stderr
	// (it signs in as the owner). Set it only when Stderr is a terminal a
	// person reads, never a log (systemd's journal, --background's file:
	// logs are kept, shipped and shown): otherwise Stderr gets the address
	// and `nanobot webui open`, which prints a link to whoever may read
	// the instance's state.
	SignInLink bool
	// Role overrides cluster.role (the --role flag): RoleAll, RoleChannels
	// or RoleWorker. Roles other than all need cluster.nats.url.
	Role string
	// Instance names this process in the cluster (default: host name and
	// a random suffix).
	Instance string
	// Logs are the process's last log lines (the logger's ring; nil: the
	// workbench shows none).
	Logs *logging.Ring
	// Platforms are the channel platforms' typed configs, so the
	// workbench checks config edits as strictly as the loader does.
	Platforms map[string]any
	// Setup runs the workbench's setup checks (nil: the platforms' public
	// APIs); tests point it at fakes.
	Setup *setup.Checker
	// ProviderSettings turns a config's providers into what
	// providers.Resolve takes, sign-ins included, for the workbench's
	// setup page (nil: keys and bases only).
	ProviderSettings func(c *configs.Config) map[string]providers.Settings
	// StorageOpen opens the inbox journal and outbox files (default
	// os.OpenFile); tests inject storage faults (disk full) here.
	StorageOpen wal.OpenFunc

	// httpLimits shortens the HTTP server's timeouts for tests that wait
	// for them (with Listener; zero: the defaults).
	httpLimits httpLimits
}

// Status is what /api/status reports (and `nanobot status` prints).
type Status struct {
	Version  string                     `json:"version"`
	Ready    bool                       `json:"ready"`
	Channels map[string]channels.Health `json:"channels"`
	Inbound  int                        `json:"inboundQueue"`
	Outbound int                        `json:"outboundQueue"`
	Pending  int                        `json:"pendingMessages"`
	// PendingReplies are replies not yet delivered (the outbox).
	PendingReplies int       `json:"pendingReplies"`
	Started        time.Time `json:"started"`
	// MCP are the MCP servers' connections.
	MCP []mcp.Status `json:"mcpServers,omitempty"`
	// Hooks are the configured hooks with their calls and failures since
	// the start (never their command, URL or token).
	Hooks []hooks.Stat `json:"hooks,omitempty"`
	// Cluster is set in cluster mode.
	Cluster *ClusterStatus `json:"cluster,omitempty"`
	// Reload is what the last reload did; nil before the first.
	Reload *ReloadStatus `json:"reload,omitempty"`
}

// RestartOrigin is the chat that asked for a restart (/restart).
type RestartOrigin struct {
	Channel    string    `json:"channel"`
	ChatID     string    `json:"chatId"`
	SessionKey string    `json:"sessionKey,omitempty"`
	At         time.Time `json:"at"`
}
