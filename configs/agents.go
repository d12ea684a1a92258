package configs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
)

// DefaultAgent names the agent agents.defaults describes.
const DefaultAgent = "default"

// Session scopes (agents.defaults.sessionScope).
const (
	// ScopePerChat keeps one conversation per chat (the default).
	ScopePerChat = "per-chat"
	// ScopePerIdentity gives a person listed in identityLinks one
	// conversation across the platforms of their direct chats.
	ScopePerIdentity = "per-identity"
	// ScopeShared puts every direct message the agent gets, on every
	// platform and from anyone allowed, in one conversation: a bot with
	// one user (nanobot's unifiedSession). Groups keep their own.
	ScopeShared = "shared"
)

// ModelPreset is a named model with its settings (modelPresets.<name>), in
// the shape the Python nanobot uses. Unset numbers keep the agent's values.
type ModelPreset struct {
	// Provider forces a provider by name ("" or "auto": matched from the
	// model name).
	Provider string `json:"provider,omitempty"`
	// Model is the model name.
	Model string `json:"model"`
	// MaxTokens caps the tokens of one reply.
	MaxTokens int `json:"maxTokens,omitempty"`
	// ContextWindowTokens is the model's context window.
	ContextWindowTokens int `json:"contextWindowTokens,omitempty"`
	// Temperature is the sampling temperature (0-2).
	Temperature *float64 `json:"temperature,omitempty"`
	// ReasoningEffort is "", "none", "minimal", "low", "medium" or "high".
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
}

// FallbackModel is one entry of fallbackModels: a preset name or a plain
// model name (a JSON string, kept in Ref), or an inline object of the
// preset's shape.
type FallbackModel struct {
	// Ref is the string form: a modelPresets name, else a model name.
	Ref string
	// Inline is the object form (used when Ref is "").
	Inline ModelPreset
}

// UnmarshalJSON accepts a string or an object.
func (f *FallbackModel) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*f = FallbackModel{}
		return json.Unmarshal(b, &f.Ref)
	}
	*f = FallbackModel{}
	return json.Unmarshal(b, &f.Inline)
}

// MarshalJSON writes the form the entry was read in.
func (f FallbackModel) MarshalJSON() ([]byte, error) {
	if f.Ref != "" || f.Inline.Model == "" {
		return json.Marshal(f.Ref)
	}
	return json.Marshal(f.Inline)
}

// ToolPolicy narrows the tools an agent (or a binding) offers the model.
type ToolPolicy struct {
	// Allow lists the only tools offered (empty: all).
	Allow []string `json:"allow,omitempty"`
	// Deny lists tools never offered; it wins over Allow.
	Deny []string `json:"deny,omitempty"`
}

// Empty reports whether the policy leaves every tool in place.
func (p ToolPolicy) Empty() bool { return len(p.Allow) == 0 && len(p.Deny) == 0 }

// AgentProfile is one more agent (an entry of agents.list, or an
// agents.<name> object). Unset fields inherit from agents.defaults, except
// Workspace (see below).
type AgentProfile struct {
	// Name identifies the agent in bindings, `nanobot agent --agent` and
	// status: lower-case letters, digits, "-" and "_". Implied by the key
	// for agents.<name>.
	Name string `json:"name,omitempty"`
	// Workspace is the agent's own folder (bootstrap files, memory,
	// skills). Unset: agents/<name>/workspace beside config.json.
	Workspace string `json:"workspace,omitempty"`
	// Model, Provider and FallbackModels as in agents.defaults.
	Model          string          `json:"model,omitempty"`
	Provider       string          `json:"provider,omitempty"`
	FallbackModels []FallbackModel `json:"fallbackModels,omitempty"`
	// ModelPreset names a modelPresets entry; it wins over Model, Provider
	// and the per-model settings.
	ModelPreset         string   `json:"modelPreset,omitempty"`
	MaxTokens           int      `json:"maxTokens,omitempty"`
	ContextWindowTokens int      `json:"contextWindowTokens,omitempty"`
	Temperature         *float64 `json:"temperature,omitempty"`
	ReasoningEffort     string   `json:"reasoningEffort,omitempty"`
	MaxToolIterations   int      `json:"maxToolIterations,omitempty"`
	MaxConcurrentTurns  int      `json:"maxConcurrentTurns,omitempty"`
	// Memory overrides agents.defaults.memory for this agent.
	Memory *MemoryConfig `json:"memory,omitempty"`
	// Tools narrows the tools this agent offers.
	Tools *ToolPolicy `json:"tools,omitempty"`
	// Sandbox overrides tools.exec.sandbox for this agent's exec tool.
	Sandbox string `json:"sandbox,omitempty"`
	// Presets are the modelPresets a user may switch to with /model
	// (unset: those of agents.defaults).
	Presets []string `json:"presets"`
	// SessionScope is "per-chat" or "per-identity" (unset: the default's).
	SessionScope string `json:"sessionScope,omitempty"`
	// Skills, when set, are the only skills this agent uses (unset: the
	// default's list, or all).
	Skills []string `json:"skills,omitempty"`
	// DisabledSkills, when set, replaces agents.defaults.disabledSkills
	// for this agent.
	DisabledSkills []string `json:"disabledSkills,omitempty"`
}

// Binding routes matching messages to an agent (top-level bindings, first
// match wins; no match: the default agent).
type Binding struct {
	// Agent names the agent ("default" is agents.defaults).
	Agent string `json:"agent"`
	// Match selects messages; every field set must match, an empty match
	// matches everything.
	Match BindingMatch `json:"match"`
	// ModelPreset, when set, is the model of these chats (a /model choice
	// in the chat still wins).
	ModelPreset string `json:"modelPreset,omitempty"`
	// Tools narrows the agent's tools further in these chats.
	Tools *ToolPolicy `json:"tools,omitempty"`
	// Queue, when set, is the queue mode of these chats ("queue",
	// "steer", "collect", "interrupt"); a chat's /queue choice still wins.
	Queue string `json:"queue,omitempty"`
}

// BindingMatch selects messages. Ids are the platform's, as shown in logs
// and pairing requests.
type BindingMatch struct {
	// Channel is the platform ("telegram", "slack", ...).
	Channel string `json:"channel,omitempty"`
	// ChatID is the chat (a Telegram chat id, a Slack channel id).
	ChatID string `json:"chatId,omitempty"`
	// SenderID is the author; on Telegram either the numeric id or the
	// username matches.
	SenderID string `json:"senderId,omitempty"`
	// ChatType is "dm" or "group".
	ChatType string `json:"chatType,omitempty"`
	// ThreadID is a Telegram forum topic or a Slack thread.
	ThreadID string `json:"threadId,omitempty"`
}

// Agent is one agent with its effective settings: agents.defaults with the
// profile's fields and the chosen preset applied.
type Agent struct {
	Name string
	// Path is where the agent is configured ("agents.defaults",
	// "agents.list[1]", "agents.work").
	Path string
	// Settings are the effective model and loop settings (Model, Provider,
	// FallbackModels, MaxTokens, ... with the preset applied).
	Settings AgentDefaults
	// Workspace is the configured workspace ("" for the default agent:
	// Paths.Workspace).
	Workspace string
	Tools     ToolPolicy
	// Sandbox is the exec sandbox mode ("" = tools.exec.sandbox).
	Sandbox string
	// Presets are the modelPresets /model offers (nil: all of them).
	Presets      []string
	SessionScope string
}

// AgentList returns every agent: the default first, then agents.list in
// order, then agents.<name> by name.
func (c *Config) AgentList() []Agent {
	d := c.Agents.Defaults
	out := []Agent{{Name: DefaultAgent, Path: "agents.defaults", Settings: c.applyPreset(d, d.ModelPreset),
		Tools: d.Tools, Presets: d.Presets, SessionScope: scopeOr(d.SessionScope)}}
	for _, np := range c.Agents.profiles() {
		out = append(out, c.profileAgent(np.path, np.p))
	}
	return out
}

// AgentNamed returns the agent called name.
func (c *Config) AgentNamed(name string) (Agent, bool) {
	for _, a := range c.AgentList() {
		if a.Name == name {
			return a, true
		}
	}
	return Agent{}, false
}

// ForAgent returns the folders of agent a: its workspace, and (for agents
// other than the default) its own sessions folder.
func (p Paths) ForAgent(a Agent) Paths {
	if a.Name == DefaultAgent {
		return p
	}
	q := p
	base := filepath.Join(p.Dir, "agents", a.Name)
	q.Workspace = filepath.Join(base, "workspace")
	if a.Workspace != "" {
		q.Workspace = resolveWorkspace(p.Dir, a.Workspace)
	}
	q.Sessions = filepath.Join(base, "sessions")
	return q
}

func scopeOr(s string) string {
	if s == "" {
		return ScopePerChat
	}
	return s
}

type namedProfile struct {
	path string
	p    AgentProfile
}

// profiles lists the configured profiles with their JSON paths; named
// objects take their key as name.
func (a AgentsConfig) profiles() []namedProfile {
	var out []namedProfile
	for i, p := range a.List {
		out = append(out, namedProfile{fmt.Sprintf("agents.list[%d]", i), p})
	}
	for _, name := range sortedKeys(a.Named) {
		p := a.Named[name]
		if p.Name == "" {
			p.Name = name
		}
		out = append(out, namedProfile{"agents." + name, p})
	}
	return out
}

func (c *Config) profileAgent(path string, p AgentProfile) Agent {
	s := c.Agents.Defaults
	s.Workspace = p.Workspace
	setIf(&s.Model, p.Model)
	setIf(&s.Provider, p.Provider)
	if p.FallbackModels != nil {
		s.FallbackModels = p.FallbackModels
	}
	setIf(&s.MaxTokens, p.MaxTokens)
	setIf(&s.ContextWindowTokens, p.ContextWindowTokens)
	if p.Temperature != nil {
		s.Temperature = *p.Temperature
	}
	setIf(&s.ReasoningEffort, p.ReasoningEffort)
	setIf(&s.MaxToolIterations, p.MaxToolIterations)
	setIf(&s.MaxConcurrentTurns, p.MaxConcurrentTurns)
	if p.Skills != nil {
		s.Skills = p.Skills
	}
	if p.DisabledSkills != nil {
		s.DisabledSkills = p.DisabledSkills
	}
	if p.Memory != nil {
		s.Memory = *p.Memory
	}
	preset := s.ModelPreset
	if p.ModelPreset != "" {
		preset = p.ModelPreset
	} else if p.Model != "" {
		preset = "" // the profile names its own model
	}
	s.ModelPreset = preset
	a := Agent{Name: p.Name, Path: path, Settings: c.applyPreset(s, preset), Workspace: p.Workspace,
		Tools: c.Agents.Defaults.Tools, Sandbox: p.Sandbox, Presets: c.Agents.Defaults.Presets, SessionScope: scopeOr(c.Agents.Defaults.SessionScope)}
	if p.Tools != nil {
		a.Tools = *p.Tools
	}
	if p.Presets != nil {
		a.Presets = p.Presets
	}
	if p.SessionScope != "" {
		a.SessionScope = p.SessionScope
	}
	return a
}

func setIf[T comparable](dst *T, v T) {
	var zero T
	if v != zero {
		*dst = v
	}
}

// applyPreset returns s with preset name's model settings (an unknown or
// empty name leaves s as it is).
func (c *Config) applyPreset(s AgentDefaults, name string) AgentDefaults {
	p, ok := c.ModelPresets[name]
	if name == "" || !ok {
		return s
	}
	return p.Apply(s)
}

// Apply returns s with the preset's model, provider and set per-model
// settings.
func (p ModelPreset) Apply(s AgentDefaults) AgentDefaults {
	s.Model = p.Model
	s.Provider = p.Provider
	if s.Provider == "" {
		s.Provider = "auto"
	}
	setIf(&s.MaxTokens, p.MaxTokens)
	setIf(&s.ContextWindowTokens, p.ContextWindowTokens)
	if p.Temperature != nil {
		s.Temperature = *p.Temperature
	}
	setIf(&s.ReasoningEffort, p.ReasoningEffort)
	return s
}

// Fallback resolves a fallbackModels entry to a model and its provider
// ("" = matched from the model name).
func (c *Config) Fallback(f FallbackModel) (model, provider string) {
	if f.Ref != "" {
		if p, ok := c.ModelPresets[f.Ref]; ok {
			return p.Model, p.Provider
		}
		return f.Ref, ""
	}
	return f.Inline.Model, f.Inline.Provider
}

// agentsType is special-cased by the checker: besides defaults and list,
// every key is a named agent.
var (
	agentsType   = reflect.TypeFor[AgentsConfig]()
	fallbackType = reflect.TypeFor[FallbackModel]()
)

// UnmarshalJSON reads defaults, list and agents.<name> objects.
func (a *AgentsConfig) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	for k, v := range raw {
		switch normKey(k) {
		case "defaults":
			if err := json.Unmarshal(v, &a.Defaults); err != nil {
				return fmt.Errorf("agents.defaults: %w", err)
			}
		case "list":
			if err := json.Unmarshal(v, &a.List); err != nil {
				return fmt.Errorf("agents.list: %w", err)
			}
		default:
			if string(bytes.TrimSpace(v)) == "null" {
				continue
			}
			var p AgentProfile
			if err := json.Unmarshal(v, &p); err != nil {
				return fmt.Errorf("agents.%s: %w", k, err)
			}
			if a.Named == nil {
				a.Named = map[string]AgentProfile{}
			}
			a.Named[k] = p
		}
	}
	return nil
}

// MarshalJSON writes defaults, list (when set) and the named agents.
func (a AgentsConfig) MarshalJSON() ([]byte, error) {
	m := map[string]any{"defaults": a.Defaults}
	if len(a.List) > 0 {
		m["list"] = a.List
	}
	for k, p := range a.Named {
		m[k] = p
	}
	return json.Marshal(m)
}
