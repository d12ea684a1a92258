// Checking the agents object: key names and types (checker) and the agents'
// settings once decoded (validator). The types are in agents.go.

package configs

import (
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
)

// checkAgents checks the agents object: defaults, list and named agents.
func (c *checker) checkAgents(path string, v any) {
	m, ok := c.object(path, v)
	if !ok {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch normKey(k) {
		case "defaults":
			c.check(join(path, k), m[k], reflect.TypeFor[AgentDefaults]())
		case "list":
			c.check(join(path, k), m[k], reflect.TypeFor[[]AgentProfile]())
		default:
			c.check(join(path, k), m[k], reflect.TypeFor[AgentProfile]())
		}
	}
}

// checkFallback accepts a string or an object of the preset's shape.
func (c *checker) checkFallback(path string, v any) {
	if _, ok := v.(string); ok {
		return
	}
	if _, ok := v.(map[string]any); ok {
		c.check(path, v, reflect.TypeFor[ModelPreset]())
		return
	}
	c.errorf(path, "want a preset name, a model name or an object {provider, model, ...}, got %s", jsonKind(v))
}

// validAgentName reports whether name can name an agent.
func validAgentName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case (r == '-' || r == '_') && i > 0:
		default:
			return false
		}
	}
	return true
}

// validateAgents checks presets, profiles, bindings and identity links;
// warnings are findings that do not stop loading (a shared workspace).
func (c *Config) validateAgents(v *validator) (warnings []string) {
	for _, name := range sortedKeys(c.ModelPresets) {
		p := c.ModelPresets[name]
		pp := "modelPresets." + name
		v.require(strings.TrimSpace(p.Model) != "", pp+".model", "must not be empty")
		c.checkModelSettings(v, pp, p)
	}
	d := c.Agents.Defaults
	c.checkPresetRef(v, "agents.defaults.modelPreset", d.ModelPreset)
	c.checkFallbacks(v, "agents.defaults.fallbackModels", d.FallbackModels)
	for i, name := range d.Presets {
		c.checkPresetRef(v, fmt.Sprintf("agents.defaults.presets[%d]", i), name)
	}
	v.oneOf("agents.defaults.sessionScope", d.SessionScope, "", ScopePerChat, ScopePerIdentity, ScopeShared)
	d.Queue.validate(v, "agents.defaults.queue")
	c.checkTools(v, "agents.defaults.tools", &d.Tools)

	names := map[string]string{DefaultAgent: "agents.defaults"}
	workspaces := map[string]string{}
	// Workspaces are compared as resolved beside a stand-in config file:
	// relative ones resolve alike wherever the real file is.
	paths := PathsFor(filepath.Join(string(filepath.Separator), "nanobot", "config.json"), c)
	workspaces[paths.Workspace] = DefaultAgent
	for _, np := range c.Agents.profiles() {
		p, pp := np.p, np.path
		switch {
		case p.Name == "":
			v.add(pp+".name", "must not be empty")
		case !validAgentName(p.Name):
			v.add(pp+".name", "want lower-case letters, digits, \"-\" and \"_\", got %q", p.Name)
		case p.Name == DefaultAgent:
			v.add(pp+".name", "%q is the agent of agents.defaults; pick another name", p.Name)
		case names[p.Name] != "":
			v.add(pp+".name", "agent %q is already defined at %s", p.Name, names[p.Name])
		default:
			names[p.Name] = pp
		}
		c.checkPresetRef(v, pp+".modelPreset", p.ModelPreset)
		c.checkFallbacks(v, pp+".fallbackModels", p.FallbackModels)
		for i, name := range p.Presets {
			c.checkPresetRef(v, fmt.Sprintf("%s.presets[%d]", pp, i), name)
		}
		v.oneOf(pp+".sessionScope", p.SessionScope, "", ScopePerChat, ScopePerIdentity, ScopeShared)
		v.oneOf(pp+".sandbox", p.Sandbox, "", "auto", "landlock", "bwrap", "none")
		v.require(p.MaxTokens >= 0, pp+".maxTokens", "want a positive number, got %d", p.MaxTokens)
		v.require(p.MaxConcurrentTurns >= 0, pp+".maxConcurrentTurns", "want a positive number, got %d", p.MaxConcurrentTurns)
		v.require(p.MaxToolIterations >= 0, pp+".maxToolIterations", "want a positive number, got %d", p.MaxToolIterations)
		if p.Temperature != nil {
			v.require(*p.Temperature >= 0 && *p.Temperature <= 2, pp+".temperature", "want 0 to 2, got %g", *p.Temperature)
		}
		v.oneOf(pp+".reasoningEffort", p.ReasoningEffort, "", "none", "minimal", "low", "medium", "high")
		c.checkTools(v, pp+".tools", p.Tools)
		if validAgentName(p.Name) {
			ws := paths.ForAgent(Agent{Name: p.Name, Workspace: p.Workspace}).Workspace
			if other, ok := workspaces[ws]; ok {
				warnings = append(warnings, fmt.Sprintf("%s.workspace: agents %q and %q share the workspace %q (memory, skills and bootstrap files are shared)", pp, other, p.Name, p.Workspace))
			} else {
				workspaces[ws] = p.Name
			}
		}
	}

	for i, b := range c.Bindings {
		bp := fmt.Sprintf("bindings[%d]", i)
		if _, ok := names[b.Agent]; !ok {
			v.add(bp+".agent", "unknown agent %q (known: %s)", b.Agent, strings.Join(sortedKeys(names), ", "))
		}
		v.oneOf(bp+".match.chatType", b.Match.ChatType, "", "dm", "group")
		c.checkPresetRef(v, bp+".modelPreset", b.ModelPreset)
		c.checkTools(v, bp+".tools", b.Tools)
		v.oneOf(bp+".queue", b.Queue, append([]string{""}, QueueModes...)...)
	}
	seen := map[string]string{}
	for _, ident := range sortedKeys(c.IdentityLinks) {
		for i, acct := range c.IdentityLinks[ident] {
			ip := fmt.Sprintf("identityLinks.%s[%d]", ident, i)
			ch, id, ok := strings.Cut(acct, ":")
			if !ok || ch == "" || id == "" {
				v.add(ip, "want \"channel:senderId\" like \"telegram:123456\", got %q", acct)
				continue
			}
			if other, dup := seen[acct]; dup {
				v.add(ip, "%q is already linked to %q", acct, other)
			}
			seen[acct] = ident
		}
	}
	v.require(d.MaxRepliesPerMinute >= 0, "agents.defaults.maxRepliesPerMinute", "want a positive number or 0 for no cap, got %d", d.MaxRepliesPerMinute)
	return warnings
}

func (c *Config) checkModelSettings(v *validator, path string, p ModelPreset) {
	v.require(p.MaxTokens >= 0, path+".maxTokens", "want a positive number, got %d", p.MaxTokens)
	v.require(p.ContextWindowTokens >= 0, path+".contextWindowTokens", "want a positive number, got %d", p.ContextWindowTokens)
	if p.Temperature != nil {
		v.require(*p.Temperature >= 0 && *p.Temperature <= 2, path+".temperature", "want 0 to 2, got %g", *p.Temperature)
	}
	v.oneOf(path+".reasoningEffort", p.ReasoningEffort, "", "none", "minimal", "low", "medium", "high")
}

func (c *Config) checkPresetRef(v *validator, path, name string) {
	if name == "" {
		return
	}
	if _, ok := c.ModelPresets[name]; !ok {
		known := "none defined"
		if len(c.ModelPresets) > 0 {
			known = "known: " + strings.Join(sortedKeys(c.ModelPresets), ", ")
		}
		v.add(path, "unknown preset %q (%s)", name, known)
	}
}

func (c *Config) checkFallbacks(v *validator, path string, fs []FallbackModel) {
	for i, f := range fs {
		fp := fmt.Sprintf("%s[%d]", path, i)
		if f.Ref != "" {
			continue // a preset name or a model name
		}
		v.require(strings.TrimSpace(f.Inline.Model) != "", fp+".model", "must not be empty")
		c.checkModelSettings(v, fp, f.Inline)
	}
}

func (c *Config) checkTools(v *validator, path string, p *ToolPolicy) {
	if p == nil {
		return
	}
	for i, n := range p.Allow {
		v.require(strings.TrimSpace(n) != "", fmt.Sprintf("%s.allow[%d]", path, i), "must not be empty")
	}
	for i, n := range p.Deny {
		v.require(strings.TrimSpace(n) != "", fmt.Sprintf("%s.deny[%d]", path, i), "must not be empty")
	}
}
