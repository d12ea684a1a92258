package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// MetaModelPreset is the session metadata key holding the chat's /model
// choice (a preset name). It is persisted with the session, so the choice
// survives a restart.
const MetaModelPreset = "modelPreset"

// Model is what a turn runs on: the provider, the model name sent to it and
// its per-model settings (zero values keep the agent's).
type Model struct {
	Provider            providers.Provider
	Model               string
	MaxTokens           int
	Temperature         *float64
	ReasoningEffort     string
	ContextWindowTokens int
}

// Presets lets a chat switch models by preset name (/model, bindings).
type Presets struct {
	// Names are the presets users may switch to with /model, in order.
	Names []string
	// Resolve returns the model of a preset, or why it cannot be used (an
	// unknown name, a provider that is not configured). It is called once
	// per preset and the result is cached; it may do no IO.
	Resolve func(name string) (Model, error)
}

// presetRunners caches a Runner per preset: a turn on a preset costs a map
// lookup.
type presetRunners struct {
	mu      sync.Mutex
	runners map[string]*Runner
}

// presetRunner returns the runner of preset name (built from the loop's
// runner once).
func (l *Loop) presetRunner(name string) (*Runner, error) {
	l.presets.mu.Lock()
	defer l.presets.mu.Unlock()
	if r, ok := l.presets.runners[name]; ok {
		return r, nil
	}
	m, err := l.cfg.Presets.Resolve(name)
	if err != nil {
		return nil, err
	}
	r := *l.cfg.Runner
	r.Provider, r.Model = m.Provider, m.Model
	if m.MaxTokens > 0 {
		r.MaxTokens = m.MaxTokens
	}
	if m.Temperature != nil {
		t := *m.Temperature
		r.Temperature = &t
	}
	if m.ReasoningEffort != "" {
		r.ReasoningEffort = m.ReasoningEffort
	}
	if l.presets.runners == nil {
		l.presets.runners = map[string]*Runner{}
	}
	l.presets.runners[name] = &r
	return &r, nil
}

// runnerFor picks the runner of a turn: the chat's /model choice, else the
// binding's preset, else the agent's; with a binding's tool denials
// applied. Without presets or denials it is the loop's runner as is.
func (l *Loop) runnerFor(m bus.Inbound, sess *session.Session) *Runner {
	r := l.cfg.Runner
	if l.cfg.Presets.Resolve != nil {
		preset := m.ModelPreset
		if p := chosenPreset(sess); p != "" {
			preset = p
		}
		if preset != "" {
			pr, err := l.presetRunner(preset)
			if err != nil {
				l.log.Warn("model preset unusable; using the agent's model", "session", sess.Key, "preset", preset, "err", err)
			} else {
				r = pr
			}
		}
	}
	if len(m.DenyTools) > 0 && r.Tools != nil {
		c := *r
		c.Tools = NewToolPolicy(r.Tools, nil, m.DenyTools)
		r = &c
	}
	return r
}

func chosenPreset(sess *session.Session) string {
	if sess == nil {
		return ""
	}
	p, _ := sess.Meta(MetaModelPreset).(string)
	return p
}

// modelCommand is /model: list the presets, switch to one, or reset.
func (l *Loop) modelCommand(ctx context.Context, m bus.Inbound, args string) error {
	names := l.cfg.Presets.Names
	if l.cfg.Presets.Resolve == nil || len(names) == 0 {
		l.reply(ctx, m, "No model presets are configured for this agent (see modelPresets in docs/agents.md).")
		return nil
	}
	sess, err := l.commandSession(ctx, m)
	if err != nil {
		return err
	}
	current := chosenPreset(sess)
	arg := strings.TrimSpace(args)
	if arg == "" {
		var b strings.Builder
		b.WriteString("Model presets:\n")
		for _, n := range names {
			desc := ""
			if mdl, err := l.cfg.Presets.Resolve(n); err != nil {
				desc = " (unavailable: " + err.Error() + ")"
			} else {
				desc = " — " + mdl.Model
			}
			if n == current {
				desc += " (current)"
			}
			fmt.Fprintf(&b, "- %s%s\n", n, desc)
		}
		if current == "" {
			fmt.Fprintf(&b, "Current: the agent's model (%s). Switch with /model <preset>.", l.cfg.Runner.Model)
		} else {
			b.WriteString("Switch with /model <preset>; /model reset goes back to the agent's model.")
		}
		l.reply(ctx, m, b.String())
		return nil
	}
	if m.IsGroup && !m.Admin {
		l.reply(ctx, m, "Only an admin of this channel may switch the model in a group.")
		return nil
	}
	if strings.EqualFold(arg, "reset") {
		if err := l.cfg.Store.SetMetadata(ctx, sess, MetaModelPreset, nil); err != nil {
			l.reply(ctx, m, "Sorry, I could not save the model choice.")
			return err
		}
		l.reply(ctx, m, fmt.Sprintf("Model reset to the agent's model (%s) from the next message.", l.cfg.Runner.Model))
		return nil
	}
	if !slices.Contains(names, arg) {
		l.reply(ctx, m, fmt.Sprintf("Unknown preset %q. Available: %s.", arg, strings.Join(names, ", ")))
		return nil
	}
	mdl, err := l.cfg.Presets.Resolve(arg)
	if err != nil {
		l.reply(ctx, m, fmt.Sprintf("Cannot switch to %q: %v", arg, err))
		return nil
	}
	if err := l.cfg.Store.SetMetadata(ctx, sess, MetaModelPreset, arg); err != nil {
		l.reply(ctx, m, "Sorry, I could not save the model choice.")
		return err
	}
	l.reply(ctx, m, fmt.Sprintf("Switched to %s (%s) from the next message; the conversation is kept.", arg, mdl.Model))
	return nil
}

// toolPolicy offers only the allowed tools (all when allow is empty) minus
// the denied ones.
type toolPolicy struct {
	next  ToolSet
	allow map[string]bool
	deny  map[string]bool
}

// NewToolPolicy narrows next to allow (empty: all) minus deny. Denying a
// tool denies its family (tools.WithFamily: exec's sessions, apply_patch
// with either file writer); allowing exec allows its sessions.
func NewToolPolicy(next ToolSet, allow, deny []string) ToolSet {
	p := toolPolicy{next: next, deny: map[string]bool{}}
	if len(allow) > 0 {
		p.allow = map[string]bool{}
		for _, n := range tools.WithSessions(allow) {
			p.allow[n] = true
		}
	}
	for _, n := range tools.WithFamily(deny) {
		p.deny[n] = true
	}
	return p
}

func (p toolPolicy) offers(name string) bool {
	return !p.deny[name] && (p.allow == nil || p.allow[name])
}

func (p toolPolicy) Definitions() []tools.Definition {
	var out []tools.Definition
	for _, d := range p.next.Definitions() {
		if p.offers(d.Name) {
			out = append(out, d)
		}
	}
	return out
}

func (p toolPolicy) Execute(ctx context.Context, name string, args map[string]any) (tools.Result, error) {
	if !p.offers(name) {
		return tools.Result{}, fmt.Errorf("tool %s is not available in this chat", name)
	}
	return p.next.Execute(ctx, name, args)
}
