package agent

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/agent/memory"
	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/agent/skills"
	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/approval"
	"github.com/nanobot-go/nanobot/tools/goals"
	"github.com/nanobot-go/nanobot/tools/image"
	"github.com/nanobot-go/nanobot/tools/message"
	"github.com/nanobot-go/nanobot/tools/recall"
	"github.com/nanobot-go/nanobot/tools/sessions"
	"github.com/nanobot-go/nanobot/tools/spawn"
)

// Deps are what the host (the gateway, the terminal) supplies to an agent.
// Provider, Tools, Store and Out are required.
type Deps struct {
	// Provider answers the model calls (already wrapped in retries and
	// fallbacks); Model is the model name sent to it.
	Provider providers.Provider
	Model    string
	// Tools are the built-in tools; New adds the ones that need the agent
	// itself: message (to Out) and spawn (sub-agents).
	Tools *tools.Registry
	// Store keeps the conversations.
	Store session.Store
	// Out receives everything the agent says.
	Out Outbox
	// Inbound is where sub-agent results are published (the bus). Nil:
	// they go straight back into this agent's loop.
	Inbound func(ctx context.Context, m bus.Inbound) error
	// MemoryLock serialises memory writers that share a workspace (cluster
	// workers); nil: the process is the only writer. See
	// memory.Options.Lock.
	MemoryLock func(ctx context.Context) (held context.Context, release func(), err error)
	// Targets decides which chats the message tool may reach besides the
	// current one (nil: only the current chat).
	Targets message.Targets
	// Redact removes secrets from the model's text (see Runner.Redact);
	// nil: none.
	Redact *redact.Redactor
	// Observer is told about every provider call and tool execution
	// (metrics); optional.
	Observer RunObserver
	// Usage records every provider call and answers /usage; optional.
	Usage *usage.Ledger
	// Budgets refuses provider calls once a budget is used up; optional,
	// and enforced over Usage.
	Budgets *usage.Budgets
	// ProviderName is the provider config name of Provider
	// (providers.<name>), for the ledger and prices.
	ProviderName string
	// OnTurnDone is called when a message was handled (see LoopConfig).
	OnTurnDone func(m bus.Inbound, err error)
	// Admit is asked before each turn (see LoopConfig); optional.
	Admit func(m bus.Inbound) bool
	// SwitchSkill saves a /skill enable (disabled false) or disable of this
	// agent in the config and returns its disabled skills afterwards; nil:
	// /skill enable|disable answers that they cannot be saved.
	SwitchSkill func(name string, disabled bool) ([]string, error)
	// Agent names the configured agent to assemble ("" or "default":
	// agents.defaults; others from agents.list / agents.<name>). Its
	// settings, tool policy and presets apply; paths must already be the
	// agent's (configs.Paths.ForAgent).
	Agent string
	// Presets let chats switch models with /model (optional).
	Presets Presets
	// Voice speaks answers to voice notes (optional; see VoiceConfig).
	Voice VoiceConfig
	// Transcription transcribes voice notes and audio files before their
	// turn (optional; see TranscriptionConfig).
	Transcription TranscriptionConfig
	// Approvals is the broker the tools ask the owner through; the loop
	// takes admins' answers to it (optional; see LoopConfig.Approvals).
	Approvals *approval.Broker
	// Embedding makes memory_search hybrid (agents.*.memory.embeddingModel);
	// nil: it ranks by words alone.
	Embedding *Embedding
	// Restart stops the gateway and starts it again, for an admin's
	// /restart (nil: not available here).
	Restart func(channel, chatID, sessionKey string)
	// Hooks are the user's extensions, asked at the hook points
	// (optional; see Hooks).
	Hooks Hooks
	Log   *slog.Logger
}

// imageTool builds generate_image from tools.image, with the endpoint of
// the provider it names (default openai; a model written
// "<provider>/<model>" names it too) unless it sets its own. The
// provider picks the wire format: gemini's native API, OpenRouter's chat
// completions with image output, else OpenAI's /images/generations.
func imageTool(cfg *configs.Config, paths configs.Paths, deps Deps, log *slog.Logger) (*image.Tool, error) {
	ic := cfg.Tools.Image
	name, model := ic.Provider, ic.Model
	if prefix, rest, ok := strings.Cut(model, "/"); ok && name == "" {
		if _, known := providers.Lookup(prefix); known {
			name, model = prefix, rest
		}
	}
	if name == "" {
		name = "openai"
	}
	base, key := cfg.Endpoint(name)
	if ic.APIBase != "" {
		base = ic.APIBase
	}
	if ic.APIKey != "" {
		key = ic.APIKey
	}
	api := image.APIOpenAI
	spec, known := providers.Lookup(name)
	if known {
		if base == "" {
			base = spec.DefaultAPIBase
		}
		switch spec.Name {
		case "gemini":
			api = image.APIGemini
		case "openrouter":
			api = image.APIOpenRouter
		}
	}
	if base == "" {
		return nil, fmt.Errorf("provider %q has no apiBase: set tools.image.apiBase", name)
	}
	return image.New(image.Options{
		APIBase: base, APIKey: key, API: api, Provider: name, Model: model, MediaDir: paths.Media,
		PricePerImage: ic.PricePerImage, Record: imageRecorder(deps.Usage, log), Logger: log,
	})
}

// Agent is an assembled agent: the loop that takes messages, with the
// runner, sub-agents, context builder and memory behind it.
type Agent struct {
	*Loop
	Runner    *Runner
	Subagents *Subagents
	Memory    *memory.Consolidator
	// Recall is memory_search's index; the loop tells it of every saved
	// turn and closes it when it stops.
	Recall *recall.Index
	// Location is the agent's timezone (agents.defaults.timezone).
	Location *time.Location
}

// New assembles the agent described by cfg's agent defaults, working in
// paths.Workspace. It is the one place an agent is put together: the gateway and
// `nanobot agent` both call it. New does no IO beyond what the memory
// package does to find its files; Run (on the embedded Loop) starts it.
func New(cfg *configs.Config, paths configs.Paths, deps Deps) (*Agent, error) {
	workspace := paths.Workspace
	log := deps.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	name := deps.Agent
	if name == "" {
		name = configs.DefaultAgent
	}
	profile, ok := cfg.AgentNamed(name)
	if !ok {
		return nil, fmt.Errorf("agent: no agent %q in the config", name)
	}
	if name != configs.DefaultAgent {
		log = log.With("agent", name)
	}
	d := profile.Settings
	a := &Agent{Location: d.Location()}
	temp := d.Temperature
	var toolSet ToolSet = deps.Tools
	if !profile.Tools.Empty() {
		toolSet = NewToolPolicy(deps.Tools, profile.Tools.Allow, profile.Tools.Deny)
	}
	a.Runner = &Runner{
		Provider: deps.Provider, Tools: toolSet, Model: deps.Model, MaxTokens: d.MaxTokens,
		Temperature: &temp, ReasoningEffort: d.ReasoningEffort, MaxIterations: d.MaxToolIterations,
		Stream: true, Observer: deps.Observer, Redact: deps.Redact, Log: log,
		Ledger: deps.Usage, Agent: deps.Agent, ProviderName: deps.ProviderName, Budgets: deps.Budgets,
		Hooks: deps.Hooks,
	}
	publish := deps.Inbound
	if publish == nil {
		publish = func(ctx context.Context, m bus.Inbound) error { a.Submit(ctx, m); return nil }
	}
	// A sub-agent's result comes back to the agent that started it, also
	// where bindings would route its chat elsewhere.
	toSelf := func(ctx context.Context, m bus.Inbound) error { m.Agent = name; return publish(ctx, m) }
	a.Subagents = &Subagents{Runner: *a.Runner, Publish: toSelf, Max: d.MaxConcurrentSubagents, Workspace: workspace, Log: log}
	msg := message.New(deps.Out, message.Options{
		Workspace: workspace, Restrict: cfg.Tools.RestrictToWorkspace, MediaDir: paths.Media,
		Targets: deps.Targets, AllowAnyTarget: cfg.Tools.Message.AllowAnyTarget,
		OwnDirs: []string{filepath.Join(paths.Media, image.GeneratedDir)},
	})
	a.Recall = recall.NewIndex(recall.IndexOptions{Workspace: workspace, Feed: RecallFeed(deps.Store), Embedder: embedderOf(deps, name, log), Logger: log})
	own := []tools.Tool{msg, spawn.New(a.Subagents), recall.New(a.Recall)}
	own = append(own, sessions.All(sessionSource{deps.Store}, toSelf)...)
	goalStore := goals.NewStore(GoalsFile(paths))
	own = append(own, goals.Tools(goalStore, deps.Agent)...)
	own = append(own, &myTool{a: a}) // reads a.Loop, set below, at call time
	if cfg.Tools.Image.Enabled {
		img, err := imageTool(cfg, paths, deps, log)
		if err != nil {
			return nil, fmt.Errorf("agent: tools.image: %w", err)
		}
		own = append(own, img)
	}
	for _, t := range own {
		if err := deps.Tools.RegisterOwn(t); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
	}
	skillLoader := skills.New(skills.Options{Workspace: workspace, Logger: log, Disabled: d.DisabledSkills, Only: d.Skills})
	builder := &ContextBuilder{Workspace: workspace, Location: a.Location, Skills: skillLoader}
	mem, err := memory.New(memory.Options{
		Workspace: workspace, Provider: a.Runner.Metered(usage.SourceConsolidation), Model: deps.Model, Store: deps.Store,
		ContextWindowTokens: d.ContextWindowTokens, MaxTokens: d.MaxTokens, Location: a.Location,
		SystemPrompt: builder.SystemPrompt, Lock: deps.MemoryLock, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	builder.Memory, a.Memory = mem, mem
	a.Loop = NewLoop(LoopConfig{
		Store: deps.Store, Builder: builder, Runner: a.Runner, Subagents: a.Subagents, Consolidator: mem,
		Out: deps.Out, MaxConcurrentTurns: d.MaxConcurrentTurns, MaxToolResultChars: d.MaxToolResultChars,
		ContextWindowTokens: d.ContextWindowTokens, IdleCompact: time.Duration(d.IdleCompactAfterMinutes) * time.Minute,
		SessionTTL: time.Duration(d.SessionTTLMinutes) * time.Minute, OnTurnDone: deps.OnTurnDone, Admit: deps.Admit, Presets: deps.Presets, Usage: deps.Usage, Log: log,
		Voice: deps.Voice, Transcription: deps.Transcription,
		Queue: d.Queue, Approvals: deps.Approvals, Goals: goalStore, Restart: deps.Restart, Hooks: deps.Hooks,
		Skills: skillLoader, SwitchSkill: deps.SwitchSkill, Recall: a.Recall,
	})
	return a, nil
}

// GoalsFile is where sustained goals are kept: state/goals.json, one file
// for every agent (each goal names its agent).
func GoalsFile(paths configs.Paths) string { return filepath.Join(paths.State, "goals.json") }

// imageRecorder is the image tool's usage recorder; nil without a ledger.
func imageRecorder(l *usage.Ledger, log *slog.Logger) func(context.Context, image.Call) {
	if l == nil {
		return nil
	}
	return usage.ImageRecorder(l, log)
}

// sessionWalker is a store that can walk its files without loading the
// sessions (session.FileStore.Each): memory_search and search_sessions.
type sessionWalker interface {
	Each(ctx context.Context, maxBytes int64, fn func(session.Entry) error) error
}
