package configs

import (
	"fmt"
	"net/url"
	"slices"
	"time"
)

// HookConfig declares one hook (docs/hooks.md): an external program or an
// HTTP endpoint asked at the points it lists, with a deadline and a
// failure policy.
type HookConfig struct {
	// Name names the hook in logs and errors; unique.
	Name string `json:"name"`
	// Points are where it is asked: inbound, before_model, after_model,
	// before_tool, after_tool, before_reply, turn_end, session_reset.
	Points []string `json:"points"`
	// Command is the program and its arguments, run through the exec
	// sandbox (tools.exec.sandbox) in the workspace; or
	Command []string `json:"command,omitempty"`
	// URL is an http(s) endpoint the request is POSTed to.
	URL string `json:"url,omitempty"`
	// Token, when set, is sent to URL as "Authorization: Bearer <token>".
	Token string `json:"token,omitempty"`
	// Timeout bounds one call ("5s", "800ms"; default 5s, at most 5m).
	Timeout string `json:"timeout,omitempty"`
	// OnFailure is what a failed or timed-out call means: "ignore" (the
	// default: logged, the agent goes on) or "block" (the step is vetoed).
	OnFailure string `json:"onFailure,omitempty"`
	// Disabled keeps the hook in the config without asking it.
	Disabled bool `json:"disabled,omitempty"`
}

// HookPoints are the hook points' names (the agent's HookPoint values).
var HookPoints = []string{"inbound", "before_model", "after_model", "before_tool", "after_tool", "before_reply", "turn_end", "session_reset"}

// Hook failure policies.
const (
	HookIgnore = "ignore"
	HookBlock  = "block"
)

// DefaultHookTimeout is HookConfig.Timeout's default; MaxHookTimeout its
// ceiling.
const (
	DefaultHookTimeout = 5 * time.Second
	MaxHookTimeout     = 5 * time.Minute
)

// TimeoutOrDefault is the hook's timeout (call after Validate).
func (h HookConfig) TimeoutOrDefault() time.Duration {
	if d, err := time.ParseDuration(h.Timeout); err == nil && d > 0 {
		return d
	}
	return DefaultHookTimeout
}

// Blocks reports whether the hook's failure vetoes the step.
func (h HookConfig) Blocks() bool { return h.OnFailure == HookBlock }

// hooks checks hooks[i].
func (v *validator) hooks(hooks []HookConfig) {
	seen := map[string]bool{}
	for i, h := range hooks {
		p := fmt.Sprintf("hooks[%d].", i)
		v.require(h.Name != "", p+"name", "must not be empty")
		if h.Name != "" {
			v.require(!seen[h.Name], p+"name", "%q is the name of an earlier hook", h.Name)
			seen[h.Name] = true
		}
		v.require(len(h.Points) > 0, p+"points", "list at least one of %v", HookPoints)
		for j, pt := range h.Points {
			v.require(slices.Contains(HookPoints, pt), fmt.Sprintf("%spoints[%d]", p, j), "unknown point %q; want one of %v", pt, HookPoints)
		}
		switch {
		case len(h.Command) > 0 && h.URL != "":
			v.add(p+"command", "set command or url, not both")
		case len(h.Command) == 0 && h.URL == "":
			v.add(p+"command", "set command (a program and its arguments) or url")
		case len(h.Command) > 0:
			v.require(h.Command[0] != "", p+"command[0]", "must name a program")
			v.require(h.Token == "", p+"token", "is sent to url only; a command hook has none")
		default:
			u, err := url.Parse(h.URL)
			v.require(err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "", p+"url", "want an http:// or https:// URL, got %q", h.URL)
		}
		if h.Timeout != "" {
			d, err := time.ParseDuration(h.Timeout)
			v.require(err == nil && d > 0 && d <= MaxHookTimeout, p+"timeout", "want a duration such as \"5s\" or \"800ms\", more than 0 and at most %s, got %q", MaxHookTimeout, h.Timeout)
		}
		v.oneOf(p+"onFailure", h.OnFailure, "", HookIgnore, HookBlock)
	}
}
