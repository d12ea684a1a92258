package configs

import (
	"fmt"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	_ "time/tzdata" // timezones work in a static binary on a scratch image
)

// AgentWarnings are findings about the agents that do not stop loading (two
// agents sharing a workspace).
func (c *Config) AgentWarnings() []string {
	var v validator
	return c.validateAgents(&v)
}

// Validate checks values that are well-typed but impossible: unknown enum
// values, out-of-range numbers, unparsable patterns.
func (c *Config) Validate() []FieldError {
	var v validator
	v.agentDefaults(c.Agents.Defaults)
	c.validateAgents(&v)
	v.providers(c.Providers)
	v.media(c)
	if l := c.Transcription.Language; l != "" {
		v.require(isLanguageCode(l), "transcription.language", "want an ISO 639 code of 2 or 3 lower-case letters, such as \"de\" or \"zh\"")
	}
	v.channels(c.Channels)
	v.gateway(c.Gateway)
	v.tools(c.Tools)
	v.api(c.API)
	v.cluster(c.Cluster)
	v.limits(c)
	v.hooks(c.Hooks)
	v.skills(c)

	v.oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	v.oneOf("log.format", c.Log.Format, "text", "json")
	return v.errs
}

// agentDefaults checks agents.defaults.
func (v *validator) agentDefaults(d AgentDefaults) {
	p := "agents.defaults."
	v.require(d.Model != "", p+"model", "must not be empty")
	v.positive(p+"maxTokens", d.MaxTokens)
	v.positive(p+"contextWindowTokens", d.ContextWindowTokens)
	if d.ContextWindowTokens > 0 && d.MaxTokens >= d.ContextWindowTokens {
		v.add(p+"maxTokens", "must be smaller than contextWindowTokens (%d)", d.ContextWindowTokens)
	}
	v.require(d.Temperature >= 0 && d.Temperature <= 2, p+"temperature", "want 0 to 2, got %g", d.Temperature)
	v.positive(p+"maxToolIterations", d.MaxToolIterations)
	v.positive(p+"maxConcurrentTurns", d.MaxConcurrentTurns)
	v.positive(p+"maxToolResultChars", d.MaxToolResultChars)
	v.positive(p+"maxConcurrentSubagents", d.MaxConcurrentSubagents)
	v.require(d.IdleCompactAfterMinutes >= 0, p+"idleCompactAfterMinutes", "want 0 (never) or more minutes, got %d", d.IdleCompactAfterMinutes)
	v.require(d.Memory.EmbeddingDimensions >= 0, p+"memory.embeddingDimensions", "want 0 (the model's own) or more, got %d", d.Memory.EmbeddingDimensions)
	v.require(d.Dream.IntervalH >= 0, p+"dream.intervalH", "want 0 (the default, 24) or more hours, got %d", d.Dream.IntervalH)
	v.require(d.SessionTTLMinutes >= 0, p+"sessionTtlMinutes", "want 0 (never) or more minutes, got %d", d.SessionTTLMinutes)
	v.require(d.IdleCompactCheckIntervalSeconds >= 0, p+"idleCompactCheckIntervalSeconds", "want 0 (the default, 60) or more seconds, got %d", d.IdleCompactCheckIntervalSeconds)
	v.positive(p+"requestTimeoutS", d.RequestTimeoutS)
	v.positive(p+"streamIdleTimeoutS", d.StreamIdleTimeoutS)
	v.oneOf(p+"reasoningEffort", d.ReasoningEffort, "", "none", "minimal", "low", "medium", "high")
	if d.Timezone != "" {
		if _, err := time.LoadLocation(d.Timezone); err != nil {
			v.add(p+"timezone", "unknown timezone %q", d.Timezone)
		}
	}
}

// providers checks each providers.<name>.
func (v *validator) providers(providers map[string]ProviderConfig) {
	for _, name := range sortedKeys(providers) {
		pc := providers[name]
		if pc.APIBase != "" && !strings.HasPrefix(pc.APIBase, "http://") && !strings.HasPrefix(pc.APIBase, "https://") {
			v.add("providers."+name+".apiBase", "want an http:// or https:// URL, got %q", pc.APIBase)
		}
		if api := pc.WireAPI(); api != "" && api != "chat" && api != "responses" {
			field := "api"
			if pc.API == "" {
				field = "apiType"
			}
			v.add("providers."+name+"."+field, "want \"chat\" or \"responses\", got %q", api)
		}
		if pc.Proxy != "" {
			u, err := url.Parse(pc.Proxy)
			if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5" && u.Scheme != "socks5h") {
				v.add("providers."+name+".proxy", "want an http://, https:// or socks5:// URL with a host, got %q", redactURL(pc.Proxy))
			}
		}
		v.oneOf("providers."+name+".thinkingStyle", pc.ThinkingStyle, "", "thinking_type", "enable_thinking", "reasoning_split")
		for _, model := range sortedKeys(pc.Prices) {
			mp := pc.Prices[model]
			at := fmt.Sprintf("providers.%s.prices[%q].", name, model)
			v.require(mp.Input != nil, at+"input", "required (US dollars per million tokens)")
			v.require(mp.Output != nil, at+"output", "required (US dollars per million tokens)")
			for _, f := range []struct {
				name  string
				price *float64
			}{{"input", mp.Input}, {"cachedInput", mp.CachedInput}, {"cacheWrite", mp.CacheWrite}, {"output", mp.Output}} {
				p := f.price
				v.require(p == nil || (*p >= 0 && *p < 1e6), at+f.name, "want 0 or more US dollars per million tokens, got %v", deref(p))
			}
		}
	}
}

// media checks image generation and text to speech.
func (v *validator) media(c *Config) {
	v.require(c.Tools.Image.PricePerImage >= 0, "tools.image.pricePerImage", "want 0 (built-in prices) or more US dollars, got %v", c.Tools.Image.PricePerImage)
	if b := c.Tools.Image.APIBase; b != "" && !strings.HasPrefix(b, "http://") && !strings.HasPrefix(b, "https://") {
		v.add("tools.image.apiBase", "want an http:// or https:// URL, got %q", b)
	}
	v.oneOf("tts.format", c.TTS.Format, "", "opus", "mp3", "wav", "aac", "flac")
	v.require(c.TTS.MaxChars >= 0, "tts.maxChars", "want 0 (default) or more, got %d", c.TTS.MaxChars)
	if c.TTS.APIBase != "" && !strings.HasPrefix(c.TTS.APIBase, "http://") && !strings.HasPrefix(c.TTS.APIBase, "https://") {
		v.add("tts.apiBase", "want an http:// or https:// URL, got %q", c.TTS.APIBase)
	}
}

// channels checks what all channels share.
func (v *validator) channels(ch ChannelsConfig) {
	v.require(ch.OutboxMaxAgeH >= 1 && ch.OutboxMaxAgeH <= 720, "channels.outboxMaxAgeH", "want 1 to 720 hours, got %d", ch.OutboxMaxAgeH)
	v.require(ch.SendMaxRetries >= 0 && ch.SendMaxRetries <= 10, "channels.sendMaxRetries", "want 0 to 10, got %d", ch.SendMaxRetries)

	for _, name := range ch.Names() {
		for i, a := range ch.Common(name).Admins {
			a = strings.TrimSpace(a)
			v.require(a != "" && a != "*", fmt.Sprintf("channels.%s.admins[%d]", name, i), "want a sender id or username (admins must be named; \"*\" is not allowed), got %q", a)
		}
	}
}

// gateway checks the gateway's bind, hosts, web UI and heartbeat.
func (v *validator) gateway(g GatewayConfig) {
	v.require(g.Host != "", "gateway.host", "must not be empty")
	v.require(g.Port >= 1 && g.Port <= 65535, "gateway.port", "want 1 to 65535, got %d", g.Port)
	for i, h := range g.AllowedHosts {
		if msg := checkAllowedHost(h); msg != "" {
			v.add(fmt.Sprintf("gateway.allowedHosts[%d]", i), "%s, got %q", msg, h)
		}
	}
	if pw := g.WebUI.Password; pw != "" {
		// A hash, not the password: never echo the value.
		v.require(isBcryptHash(pw), "gateway.webui.password", "want a bcrypt hash (set it with `nanobot webui set-password`), got a value that is not one")
	}
	if g.Heartbeat.Enabled {
		v.require(g.Heartbeat.IntervalS >= 10, "gateway.heartbeat.intervalS", "want at least 10 seconds, got %d", g.Heartbeat.IntervalS)
	}
}

// tools checks exec, web, the SSRF allowlist and MCP servers.
func (v *validator) tools(t ToolsConfig) {
	v.require(t.Exec.Timeout >= 1 && t.Exec.Timeout <= 600, "tools.exec.timeout", "want 1 to 600 seconds, got %d", t.Exec.Timeout)
	v.oneOf("tools.exec.sandbox", t.Exec.Sandbox, "auto", "landlock", "bwrap", "none")
	for i, p := range append(append([]string{}, t.Exec.AllowPaths.ReadOnly...), t.Exec.AllowPaths.ReadWrite...) {
		v.require(strings.HasPrefix(p, "~/") || filepath.IsAbs(p), "tools.exec.allowPaths", "entry %d (%q) must be an absolute path or start with ~/", i, p)
	}
	for name, lim := range map[string]int64{"cpuSeconds": t.Exec.Limits.CPUSeconds, "memoryMb": t.Exec.Limits.MemoryMB, "processes": t.Exec.Limits.Processes, "fileSizeMb": t.Exec.Limits.FileSizeMB} {
		v.require(lim >= -1, "tools.exec.limits."+name, "want a positive number, 0 for the default or -1 for none, got %d", lim)
	}
	if ss := t.Exec.Sessions; ss.Enable {
		v.require(ss.MaxSessions >= 1 && ss.MaxSessions <= 64, "tools.exec.sessions.maxSessions", "want 1 to 64, got %d", ss.MaxSessions)
		v.require(ss.IdleTimeoutMinutes >= 1, "tools.exec.sessions.idleTimeoutMinutes", "want at least 1 minute, got %d", ss.IdleTimeoutMinutes)
		v.require(ss.MaxLifetimeMinutes >= 1 && ss.MaxLifetimeMinutes <= 10080, "tools.exec.sessions.maxLifetimeMinutes", "want 1 to 10080 minutes (a week), got %d", ss.MaxLifetimeMinutes)
		v.require(ss.MaxOutputChars >= 1000 && ss.MaxOutputChars <= 1000000, "tools.exec.sessions.maxOutputChars", "want 1000 to 1000000 characters, got %d", ss.MaxOutputChars)
	}
	v.patterns("tools.exec.denyPatterns", t.Exec.DenyPatterns)
	v.patterns("tools.exec.allowPatterns", t.Exec.AllowPatterns)
	v.oneOf("tools.exec.approval", t.Exec.Approval, "off", "risky", "always")
	v.patterns("tools.exec.approvedCommands", t.Exec.ApprovedCommands)
	v.require(t.Exec.ApprovalTimeout >= 10 && t.Exec.ApprovalTimeout <= 86400, "tools.exec.approvalTimeout", "want 10 to 86400 seconds, got %d", t.Exec.ApprovalTimeout)
	v.oneOf("tools.web.search.provider", t.Web.Search.Provider, "duckduckgo", "brave", "tavily", "searxng", "jina", "kagi", "olostep", "bocha", "volcengine", "keenable", "serper", "exa")
	if t.Web.Search.Provider == "searxng" {
		v.require(t.Web.Search.BaseURL != "", "tools.web.search.baseUrl", "required for searxng")
	}
	v.require(t.Web.Search.MaxResults >= 1 && t.Web.Search.MaxResults <= 10, "tools.web.search.maxResults", "want 1 to 10, got %d", t.Web.Search.MaxResults)
	v.positive("tools.web.fetch.maxChars", t.Web.Fetch.MaxChars)
	v.require(t.Browser.IdleTimeoutMinutes >= 1 && t.Browser.IdleTimeoutMinutes <= 1440, "tools.browser.idleTimeoutMinutes", "want 1 to 1440 minutes, got %d", t.Browser.IdleTimeoutMinutes)
	v.oneOf("tools.browser.approval", t.Browser.Approval, "off", "risky", "always")
	v.require(t.Browser.MaxTabs >= 1 && t.Browser.MaxTabs <= 32, "tools.browser.maxTabs", "want 1 to 32, got %d", t.Browser.MaxTabs)
	for i, cidr := range t.SSRFAllowlist {
		if _, err := netip.ParsePrefix(cidr); err != nil {
			v.add(fmt.Sprintf("tools.ssrfAllowlist[%d]", i), "want a CIDR like 192.168.1.0/24, got %q", cidr)
		}
	}
	for _, name := range sortedKeys(t.MCPServers) {
		s := t.MCPServers[name]
		sp := "tools.mcpServers." + name
		v.oneOf(sp+".type", s.Type, "stdio", "sse", "streamableHttp")
		switch s.Type {
		case "stdio":
			v.require(s.Command != "", sp+".command", "required for a stdio server")
		case "sse", "streamableHttp":
			v.require(s.URL != "", sp+".url", "required for an %s server", s.Type)
		case "":
			v.add(sp, "needs a command (stdio) or a url (sse, streamableHttp)")
		}
		v.positive(sp+".toolTimeout", s.ToolTimeout)
		if s.Auth != "" {
			v.oneOf(sp+".auth", s.Auth, "oauth")
			v.require(s.Type != "stdio", sp+".auth", "OAuth is for HTTP servers (sse, streamableHttp), not stdio")
		}
	}
}

type validator struct{ errs []FieldError }

func (v *validator) add(path, format string, args ...any) {
	v.errs = append(v.errs, FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) require(ok bool, path, format string, args ...any) {
	if !ok {
		v.add(path, format, args...)
	}
}

func (v *validator) positive(path string, n int) {
	v.require(n > 0, path, "want a positive number, got %d", n)
}

func (v *validator) oneOf(path, val string, allowed ...string) {
	if !slices.Contains(allowed, val) {
		var shown []string
		for _, a := range allowed {
			if a != "" {
				shown = append(shown, fmt.Sprintf("%q", a))
			}
		}
		v.add(path, "want one of %s, got %q", strings.Join(shown, ", "), val)
	}
}

func (v *validator) patterns(path string, pats []string) {
	for i, p := range pats {
		if _, err := regexp.Compile(p); err != nil {
			v.add(fmt.Sprintf("%s[%d]", path, i), "invalid regular expression: %v", err)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkAllowedHost returns why h is not a valid gateway.allowedHosts entry,
// or "".
func checkAllowedHost(h string) string {
	switch {
	case h == "*":
		return ""
	case strings.TrimSpace(h) != h || h == "":
		return "want a host name without spaces"
	case strings.Contains(h, "://") || strings.ContainsAny(h, "/?#@"):
		return "want a bare host name like bot.example.com (no scheme, path or user)"
	}
	name := strings.TrimPrefix(h, "*.")
	if strings.Contains(name, "*") {
		return `want "*" only as a leading "*." label`
	}
	if _, err := netip.ParseAddr(strings.Trim(name, "[]")); err == nil {
		return ""
	}
	if strings.Contains(name, ":") {
		return "want the host name without a port (every port of the gateway is the same server)"
	}
	return ""
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// isBcryptHash reports whether s looks like a bcrypt hash ("$2b$10$" and
// 53 characters of salt and digest).
func isBcryptHash(s string) bool {
	if len(s) != 60 || s[0] != '$' || s[1] != '2' || s[3] != '$' || s[6] != '$' {
		return false
	}
	return strings.ContainsRune("aby", rune(s[2]))
}

// isLanguageCode reports whether s is 2 or 3 lower-case ASCII letters.
func isLanguageCode(s string) bool {
	if len(s) < 2 || len(s) > 3 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}
