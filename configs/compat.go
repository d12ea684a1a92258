package configs

import (
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// Compatibility with the Python nanobot's config.json. Every option its
// docs describe either has a field here with the same meaning, or a
// compatNote below that says what this program does instead. Notes are
// applied to the file's tree before type-checking: a key with no field here
// is removed from the tree with its specific warning, so no documented
// nanobot option ever meets the generic "unknown key" warning.

// CompatStatus classifies a Python nanobot option.
type CompatStatus string

const (
	// CompatSame: carried over with the same meaning.
	CompatSame CompatStatus = "carried over"
	// CompatChanged: accepted, but it works differently here.
	CompatChanged CompatStatus = "changes meaning"
	// CompatUnsupported: accepted and ignored; the message says what
	// happens instead.
	CompatUnsupported CompatStatus = "unsupported"
)

// compatNote describes one Python nanobot option that is not carried over
// as it is.
type compatNote struct {
	// path is dotted; "*" matches any one key. Keys match in any spelling
	// (camelCase, snake_case).
	path   string
	status CompatStatus
	// msg says what this program does instead.
	msg string
	// when, if set, limits the note to the values it accepts; other
	// values are carried over silently (they mean what they mean here).
	when func(v any) bool
	// keep leaves the key in the tree (it has a field here); otherwise it
	// is removed after the warning.
	keep bool
}

func isTrue(v any) bool     { b, ok := v.(bool); return ok && b }
func isNotFalse(v any) bool { b, ok := v.(bool); return !ok || b }
func isFalse(v any) bool    { b, ok := v.(bool); return ok && !b }
func notEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}
func equals(want string) func(any) bool {
	return func(v any) bool { s, ok := v.(string); return ok && strings.EqualFold(s, want) }
}

// compatNotes lists every documented Python nanobot option that is not
// simply carried over. Keep docs/migrating.md in step.
var compatNotes = []compatNote{
	// Agents.
	{path: "agents.defaults.contextBlockLimit", status: CompatUnsupported, msg: "not supported; contextWindowTokens bounds the prompt and memory consolidation keeps it inside"},
	{path: "agents.defaults.failOnToolError", status: CompatChanged, msg: "a failed tool call is always reported back to the model as the tool's result, which lets it recover; there is no switch to end the turn instead"},
	{path: "agents.defaults.providerRetryMode", status: CompatChanged, msg: "retries follow the built-in policy (backoff with jitter, Retry-After honoured) and then fallbackModels; there is no persistent mode", when: equals("persistent")},
	{path: "agents.defaults.toolHintMaxLength", status: CompatChanged, msg: "tool hints are a short line per tool call; their length is not configurable"},
	{path: "agents.defaults.timezoneMode", status: CompatChanged, msg: "timezone \"\" means the machine's zone and a set timezone is used as given; timezoneMode is not needed"},
	{path: "agents.defaults.botName", status: CompatUnsupported, msg: "the CLI prompt name is not configurable; name the bot in the workspace's SOUL.md"},
	{path: "agents.defaults.botIcon", status: CompatUnsupported, msg: "the CLI prompt icon is not configurable"},
	{path: "agents.defaults.consolidationRatio", status: CompatChanged, msg: "memory consolidation uses a fixed share of contextWindowTokens"},
	{path: "agents.defaults.dream.cron", status: CompatChanged, msg: "dreams run every intervalH hours; a cron expression is not read"},
	{path: "agents.defaults.dream.modelOverride", status: CompatChanged, msg: "a dream uses the agent's model"},

	// Providers.
	{path: "providers.*.extraQuery", status: CompatUnsupported, msg: "extra query parameters are not sent; put an Azure api-version in apiVersion, or the parameters in apiBase", when: notEmpty},
	{path: "providers.*.displayName", status: CompatChanged, msg: "providers are shown by their config name"},
	{path: "providers.*.defaultModel", status: CompatChanged, msg: "not a provider setting here; set agents.defaults.model (for azure_openai, the deployment name)"},
	{path: "providers.openaiCodex", status: CompatChanged, keep: true, msg: "signed in with `nanobot provider login codex` (tokens in the instance state folder, not in config; docs/providers.md)"},
	{path: "providers.githubCopilot", status: CompatChanged, keep: true, msg: "signed in with `nanobot provider login copilot` (tokens in the instance state folder, not in config; docs/providers.md)"},
	{path: "providers.xaiGrok", status: CompatChanged, keep: true, msg: "signed in with `nanobot provider login xai-grok` (tokens in the instance state folder, not in config; docs/providers.md); with an apiKey it is read as providers.xai, xAI's API (https://api.x.ai/v1)"},

	// Transcription.
	{path: "transcription.maxDurationSec", status: CompatChanged, msg: "voice notes are bounded by the channel's maxMediaBytes, not by duration"},
	{path: "transcription.maxUploadMb", status: CompatChanged, msg: "voice notes are bounded by the channel's maxMediaBytes"},
	{path: "channels.showReasoning", status: CompatUnsupported, msg: "model reasoning is never shown in chats", when: isTrue},
	{path: "channels.extractDocumentText", status: CompatUnsupported, msg: "ignored (deprecated in nanobot as well); documents are read on demand"},

	// Gateway and API.
	{path: "gateway.heartbeat.keepRecentMessages", status: CompatChanged, msg: "heartbeat turns run in the target chat's own session, which memory consolidation keeps bounded; there is no separate heartbeat session to trim"},
	{path: "gateway.restartMode", status: CompatChanged, msg: "the gateway reloads channels on SIGHUP and is restarted by its supervisor (systemd, Docker); restartMode is not needed"},
	{path: "api.host", status: CompatChanged, msg: "the API is served by the gateway's HTTP server under /v1 (gateway.host:gateway.port); see docs/api.md"},
	{path: "api.port", status: CompatChanged, msg: "the API is served by the gateway's HTTP server under /v1 (gateway.host:gateway.port); see docs/api.md"},

	{path: "api.timeout", status: CompatChanged, msg: "an API request is bounded by agents.defaults.requestTimeoutS per model call, not by one overall timeout"},

	// Tools.
	{path: "tools.web.fetch.useJinaReader", status: CompatChanged, when: isNotFalse, msg: "pages are always converted to Markdown locally; no fetched URL is sent to Jina Reader"},
	{path: "tools.exec.pathPrepend", status: CompatUnsupported, msg: "PATH is not rewritten; commands see the gateway's PATH (add folders to it, or tools.exec.allowedEnvKeys)", when: notEmpty},
	{path: "tools.exec.pathAppend", status: CompatUnsupported, msg: "PATH is not rewritten; commands see the gateway's PATH (add folders to it, or tools.exec.allowedEnvKeys)", when: notEmpty},
	{path: "tools.exec.sandboxRoBinds", status: CompatChanged, msg: "use tools.exec.allowPaths.readOnly"},
	{path: "tools.exec.sandboxRwBinds", status: CompatChanged, msg: "use tools.exec.allowPaths.readWrite"},
	{path: "tools.file", status: CompatChanged, msg: "the file tools are always offered; list names in tools.disabled to remove some"},
	{path: "tools.cliApps", status: CompatUnsupported, msg: "CLI app tools are not supported; use the exec tool or an MCP server"},
	{path: "tools.my", status: CompatUnsupported, msg: "the self-configuration tool is not supported"},
	{path: "tools.maxSessionMessagesPerMinute", status: CompatChanged, msg: "use agents.defaults.maxRepliesPerMinute"},
	{path: "tools.webuiAllowLocalServiceAccess", status: CompatUnsupported, msg: "there is no nanobot web UI here; the gateway's web chat has no such switch"},
	{path: "tools.webuiAllowRemotePackageInstall", status: CompatUnsupported, msg: "there is no nanobot web UI here"},

	// Channels (keys of platforms that exist here).
	{path: "channels.telegram.mode", status: CompatChanged, when: equals("webhook"),
		msg: "webhook mode is on whenever webhookUrl is set; the mode key is not needed"},
	{path: "channels.telegram.webhookListenHost", status: CompatChanged, msg: "the webhook is served by the gateway's HTTP server (gateway.host:gateway.port) at the path of webhookUrl; point the reverse proxy there"},
	{path: "channels.telegram.webhookListenPort", status: CompatChanged, msg: "the webhook is served by the gateway's HTTP server (gateway.host:gateway.port) at the path of webhookUrl; point the reverse proxy there"},
	{path: "channels.telegram.webhookPath", status: CompatChanged, msg: "the webhook is served at the path of webhookUrl on the gateway's HTTP server; a proxy that rewrites paths must forward to that path"},
	// channels.telegram.streaming and richMessages are fields of the Telegram channel.
	{path: "channels.discord.streaming", status: CompatChanged, msg: "replies stream by editing the message whenever the model streams; the switch is not needed"},
	{path: "channels.slack.dm", status: CompatChanged, msg: "direct messages follow allowFrom (and pairing); a separate dm policy is not supported — put the allowed user ids in allowFrom"},
	{path: "channels.feishu.doneEmoji", status: CompatUnsupported, msg: "only reactEmoji is used: it is put on the message once the gateway has taken it; no reaction marks the reply as done"},
	{path: "channels.email.postAction", status: CompatChanged, when: equals("delete"), msg: "processed mail is never deleted here; it is marked seen (or moved with moveTo)"},
	{path: "channels.email.postActionIgnoreSkipped", status: CompatChanged, msg: "mail from senders not on allowFrom is always left unread and never moved"},
	{path: "channels.email.postActionExpunge", status: CompatChanged, msg: "there is no switch for it: moves use the IMAP MOVE command (the client library falls back for servers without it)", when: isTrue},
	{path: "channels.email.allowedAttachmentTypes", status: CompatChanged, msg: "attachments are switched on with attachments.enabled (all types, bounded by attachments.maxBytes and maxCount); MIME filters are not supported", when: notEmpty},
	{path: "channels.whatsapp.databasePath", status: CompatChanged, msg: "the WhatsApp device store is whatsapp-device.gob in the instance's state folder; the path is not configurable"},
	{path: "channels.whatsapp.lidMappings", status: CompatChanged, msg: "senders known only by their LID are mapped to their phone number through the WhatsApp device store; allowFrom lists numbers (with or without +) or JIDs"},
	// channels.matrix.e2eeEnabled is a field of the Matrix channel (end-to-end encryption).
	{path: "channels.matrix.sasVerification", status: CompatChanged, when: isTrue, keep: true,
		msg: "emoji (SAS) verification of the bot's device works when started from the bot's session in your client (to-device); verifying the bot as a user in a direct chat (in-room) is not supported and is logged instead. The bot confirms its side; compare the emoji or numbers it logs with your screen"},
	{path: "channels.matrix.allowRoomMentions", status: CompatChanged, msg: "with groupPolicy \"mention\" the bot answers mentions of its user id; @room mentions never trigger it"},
	{path: "channels.mochat.socketDisableMsgpack", status: CompatChanged, msg: "Socket.IO frames are always JSON (socket.io's default parser); msgpack is not spoken"},
	{path: "channels.mochat.socketReconnectDelayMs", status: CompatChanged, msg: "reconnects back off from 1 s to 1 min, like every channel"},
	{path: "channels.mochat.socketMaxReconnectDelayMs", status: CompatChanged, msg: "reconnects back off from 1 s to 1 min, like every channel"},
	{path: "channels.signal.phoneNumber", status: CompatChanged, msg: "use account (the bot's number) with httpUrl or tcpAddr of signal-cli's JSON-RPC daemon (docs/configuration.md)"},
	{path: "channels.signal.daemonHost", status: CompatChanged, msg: "use httpUrl (\"http://host:port\") or tcpAddr of signal-cli's JSON-RPC daemon"},
	{path: "channels.signal.daemonPort", status: CompatChanged, msg: "use httpUrl (\"http://host:port\") or tcpAddr of signal-cli's JSON-RPC daemon"},
	{path: "channels.signal.dm", status: CompatChanged, msg: "direct messages follow allowFrom (and pairing); a separate dm policy is not supported"},
	{path: "channels.signal.group", status: CompatChanged, msg: "use groupPolicy (\"mention\", \"open\" or \"allowlist\") and groupAllowFrom"},

	// Channels that do not exist here.
	{path: "channels.websocket", status: CompatChanged, msg: "the gateway's built-in web chat and the OpenAI-compatible API (/v1) replace nanobot's WebSocket channel; see docs/gateway.md and docs/api.md"},
	{path: "channels.napcat", status: CompatChanged, msg: "use channels.onebot (NapCat speaks OneBot v11) with its websocket URL"},
	{path: "channels.msteams", status: CompatChanged, msg: "use channels.teams (Bot Framework) — see docs/configuration.md"},
}

// Compat env variables of the Python nanobot, mapped onto config paths.
var compatEnv = map[string]string{
	"NANOBOT_LLM_TIMEOUT_S":           "agents" + envDelim + "defaults" + envDelim + "requestTimeoutS",
	"NANOBOT_STREAM_IDLE_TIMEOUT_S":   "agents" + envDelim + "defaults" + envDelim + "streamIdleTimeoutS",
	"NANOBOT_MAX_CONCURRENT_REQUESTS": "agents" + envDelim + "defaults" + envDelim + "maxConcurrentTurns",
}

// compatEnvNotes are Python nanobot variables with no counterpart (none
// left: the LANGFUSE_* variables turn on agent/langfuse).
var compatEnvNotes = map[string]string{}

// CompatFinding is what loading found about one Python nanobot option.
type CompatFinding struct {
	Path   string
	Status CompatStatus
	Msg    string
}

func (f CompatFinding) String() string { return f.Path + ": " + f.Msg }

// applyCompat applies the notes to tree: each matching key yields a
// finding, and keys without a field here are removed. A note whose key has
// become a real field (a channel package grew the option, or a platform of
// that name was registered) no longer applies. platforms is as in Options.
// Findings are sorted by path.
func applyCompat(tree map[string]any, platforms map[string]any) []CompatFinding {
	// Translations first: they read keys (mode, postAction) the notes
	// then remove.
	out := translateCompat(tree)
	for _, n := range compatNotes {
		segs := strings.Split(n.path, ".")
		walkCompat(tree, segs, "", func(parent map[string]any, key, path string) {
			if !n.keep && knownKey(strings.Split(path, "."), platforms) {
				return
			}
			v := parent[key]
			if n.when != nil && !n.when(v) {
				if !n.keep {
					// This value is what happens here anyway.
					out = append(out, CompatFinding{Path: path, Status: CompatSame, Msg: "what happens here anyway; the key is not needed"})
					delete(parent, key)
				}
				return
			}
			out = append(out, CompatFinding{Path: path, Status: n.status, Msg: n.msg})
			if !n.keep {
				delete(parent, key)
			}
		})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// walkCompat calls fn for every key of tree at the path segs.
func walkCompat(node map[string]any, segs []string, prefix string, fn func(parent map[string]any, key, path string)) {
	if len(segs) == 0 {
		return
	}
	var keys []string
	if segs[0] == "*" {
		for k := range node {
			keys = append(keys, k)
		}
		sort.Strings(keys)
	} else if k, ok := findKey(node, segs[0]); ok {
		keys = []string{k}
	}
	for _, k := range keys {
		path := join(prefix, k)
		if len(segs) == 1 {
			fn(node, k, join(prefix, canonSeg(segs[0], k)))
			continue
		}
		if child, ok := node[k].(map[string]any); ok {
			walkCompat(child, segs[1:], path, fn)
		}
	}
}

// knownKey reports whether path names a field of the typed config (the
// channel platforms' types included).
func knownKey(path []string, platforms map[string]any) bool {
	t := reflect.TypeFor[Config]()
	for i, seg := range path {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case t == channelsType:
			if i == len(path)-1 {
				_, ok := platforms[seg]
				return ok || slices.Contains(channelsSharedKeys, seg)
			}
			typed, ok := typedPlatform(platforms, seg)
			if !ok {
				return false
			}
			t = typed
		case t.Kind() == reflect.Struct:
			f, ok := structFields(t)[normKey(seg)]
			if !ok {
				return false
			}
			t = f.typ
		case t.Kind() == reflect.Map:
			if i == len(path)-1 {
				return false // an entry, not a field: notes about names apply
			}
			t = t.Elem()
		default:
			return false
		}
	}
	return true
}

func canonSeg(pattern, key string) string {
	if pattern == "*" {
		return key
	}
	return pattern
}

// translateCompat rewrites Python nanobot options that have a counterpart
// under another name or shape here, and reports each rewrite.
func translateCompat(tree map[string]any) []CompatFinding {
	var out []CompatFinding
	ch := lookupMap(tree, []string{"channels"}, false)
	if tg := lookupMap(ch, []string{"telegram"}, false); tg != nil {
		if k, ok := findKey(tg, "webhookSecretToken"); ok {
			if _, has := findKey(tg, "webhookSecret"); !has {
				tg["webhookSecret"] = tg[k]
			}
			delete(tg, k)
			out = append(out, CompatFinding{Path: "channels.telegram.webhookSecretToken", Status: CompatSame, Msg: "carried over as webhookSecret"})
		}
		if k, ok := findKey(tg, "mode"); ok && equals("polling")(tg[k]) {
			if u, has := findKey(tg, "webhookUrl"); has && notEmpty(tg[u]) {
				delete(tg, u)
				out = append(out, CompatFinding{Path: "channels.telegram.webhookUrl", Status: CompatChanged, Msg: "ignored because mode is \"polling\" (webhook mode is on whenever webhookUrl is set)"})
			}
		}
	}
	if em := lookupMap(ch, []string{"email"}, false); em != nil {
		k, ok := findKey(em, "postActionMoveMailbox")
		if ok {
			act, _ := findKey(em, "postAction")
			if equals("move")(em[act]) || act == "" {
				if _, has := findKey(em, "moveTo"); !has && notEmpty(em[k]) {
					em["moveTo"] = em[k]
				}
				out = append(out, CompatFinding{Path: "channels.email.postActionMoveMailbox", Status: CompatSame, Msg: "carried over as moveTo"})
			}
			delete(em, k)
		}
	}
	if k, ok := findKey(ch, "transcriptionProvider"); ok && notEmpty(ch[k]) {
		if tr := lookupMap(tree, []string{"transcription"}, true); tr != nil {
			if _, has := findKey(tr, "provider"); !has {
				tr["provider"] = ch[k]
			}
		}
		delete(ch, k)
		out = append(out, CompatFinding{Path: "channels.transcriptionProvider", Status: CompatSame, Msg: "carried over as transcription.provider (nanobot reads it when that is not set)"})
	}
	if k, ok := findKey(ch, "transcriptionLanguage"); ok && notEmpty(ch[k]) {
		if tr := lookupMap(tree, []string{"transcription"}, true); tr != nil {
			if _, has := findKey(tr, "language"); !has {
				tr["language"] = ch[k]
			}
		}
		delete(ch, k)
		out = append(out, CompatFinding{Path: "channels.transcriptionLanguage", Status: CompatSame, Msg: "carried over as transcription.language"})
	}
	if d := lookupMap(tree, []string{"agents", "defaults"}, false); d != nil {
		if k, ok := findKey(d, "unifiedSession"); ok {
			if isTrue(d[k]) {
				if _, has := findKey(d, "sessionScope"); !has {
					d["sessionScope"] = ScopeShared
				}
				out = append(out, CompatFinding{Path: "agents.defaults.unifiedSession", Status: CompatSame, Msg: "carried over as sessionScope \"shared\": every direct message in one conversation (docs/agents.md)"})
			}
			delete(d, k)
		}
	}
	out = append(out, mergeSlackDM(lookupMap(ch, []string{"slack"}, false))...)
	out = append(out, translateImageGeneration(tree)...)
	out = append(out, translateValues(tree)...)
	return out
}

// mergeSlackDM merges channels.slack.dm.allowFrom (who may write to the
// bot directly) into channels.slack.allowFrom: here one list admits a
// sender everywhere, so the ids are kept rather than dropped. The dm
// object's other keys stay for their compatibility note.
func mergeSlackDM(slack map[string]any) []CompatFinding {
	k, ok := findKey(slack, "dm")
	if !ok {
		return nil
	}
	dm, _ := slack[k].(map[string]any)
	ak, ok := findKey(dm, "allowFrom")
	if !ok {
		return nil
	}
	ids, _ := dm[ak].([]any)
	delete(dm, ak)
	if len(dm) == 0 {
		delete(slack, k)
	}
	if len(ids) == 0 {
		return nil
	}
	tk, ok := findKey(slack, "allowFrom")
	if !ok {
		tk = "allowFrom"
	}
	have, _ := slack[tk].([]any)
	seen := map[string]bool{}
	for _, id := range have {
		seen[fmt.Sprint(id)] = true
	}
	for _, id := range ids {
		if !seen[fmt.Sprint(id)] {
			have = append(have, id)
			seen[fmt.Sprint(id)] = true
		}
	}
	slack[tk] = have
	return []CompatFinding{{Path: "channels.slack.dm.allowFrom", Status: CompatSame, Msg: "merged into channels.slack.allowFrom (one list admits a sender in direct messages and channels)"}}
}

// translateImageGeneration carries tools.imageGeneration over to
// tools.image (the generate_image tool): enabled, provider and model keep
// their meaning; the per-call defaults are the tool's arguments here.
func translateImageGeneration(tree map[string]any) []CompatFinding {
	tools := lookupMap(tree, []string{"tools"}, false)
	k, ok := findKey(tools, "imageGeneration")
	if !ok {
		return nil
	}
	src, _ := tools[k].(map[string]any)
	delete(tools, k)
	if src == nil {
		return nil
	}
	dst := lookupMap(tools, []string{"image"}, true)
	if dst == nil {
		return []CompatFinding{{Path: "tools.imageGeneration", Status: CompatChanged, Msg: "not carried over: tools.image is set and is not an object"}}
	}
	var out []CompatFinding
	for _, key := range []string{"enabled", "provider", "model"} {
		if sk, ok := findKey(src, key); ok {
			if _, has := findKey(dst, key); !has {
				dst[key] = src[sk]
			}
			out = append(out, CompatFinding{Path: "tools.imageGeneration." + key, Status: CompatSame, Msg: "carried over as tools.image." + key})
		}
	}
	if _, ok := findKey(dst, "model"); !ok && isTrue(dst["enabled"]) {
		// nanobot's default; ours would be OpenAI's gpt-image-1.
		dst["model"] = "openai/gpt-5.4-image-2"
	}
	if _, ok := findKey(dst, "provider"); !ok && isTrue(dst["enabled"]) {
		dst["provider"] = "openrouter"
	}
	for _, key := range []string{"defaultAspectRatio", "defaultImageSize", "maxImagesPerTurn", "saveDir"} {
		if _, ok := findKey(src, key); ok {
			out = append(out, CompatFinding{Path: "tools.imageGeneration." + key, Status: CompatChanged,
				Msg: "the size and aspect are generate_image's arguments, images are saved under the media folder, one image per call"})
		}
	}
	return out
}

// translateValues maps Python nanobot values this program's validation
// would refuse onto their nearest meaning here.
func translateValues(tree map[string]any) []CompatFinding {
	var out []CompatFinding
	effort := func(m map[string]any, at string) {
		k, ok := findKey(m, "reasoningEffort")
		if !ok {
			return
		}
		s, _ := m[k].(string)
		switch strings.ToLower(s) {
		case "xhigh", "max":
			m[k] = "high"
			out = append(out, CompatFinding{Path: at + ".reasoningEffort", Status: CompatChanged, Msg: fmt.Sprintf("%q is sent as \"high\", the most this program asks for", s)})
		case "adaptive":
			delete(m, k)
			out = append(out, CompatFinding{Path: at + ".reasoningEffort", Status: CompatChanged, Msg: "\"adaptive\" leaves the effort to the provider's default"})
		}
	}
	if d := lookupMap(tree, []string{"agents", "defaults"}, false); d != nil {
		effort(d, "agents.defaults")
	}
	if presets := lookupMap(tree, []string{"modelPresets"}, false); presets != nil {
		for name, v := range presets {
			if p, ok := v.(map[string]any); ok {
				effort(p, "modelPresets."+name)
			}
		}
	}
	if ex := lookupMap(tree, []string{"tools", "exec"}, false); ex != nil {
		if k, ok := findKey(ex, "timeout"); ok {
			if n, isNum := ex[k].(float64); isNum && (n <= 0 || n > 600) {
				ex[k] = float64(600)
				out = append(out, CompatFinding{Path: "tools.exec.timeout", Status: CompatChanged, Msg: fmt.Sprintf("%v means %s in nanobot; commands here are limited to 600 seconds at most", n, map[bool]string{true: "no limit", false: "more than 600 s"}[n <= 0])})
			}
		}
		if k, ok := findKey(ex, "sandbox"); ok && ex[k] == "" {
			delete(ex, k)
			out = append(out, CompatFinding{Path: "tools.exec.sandbox", Status: CompatChanged, Msg: "\"\" runs commands unconfined in nanobot; here the default \"auto\" confines them with the strongest sandbox available (set \"none\" for nanobot's behaviour)"})
		}
	}
	if se := lookupMap(tree, []string{"tools", "web", "search"}, false); se != nil {
		if k, ok := findKey(se, "maxResults"); ok {
			if n, isNum := se[k].(float64); isNum && n > 10 {
				se[k] = float64(10)
				out = append(out, CompatFinding{Path: "tools.web.search.maxResults", Status: CompatChanged, Msg: "at most 10 results per search here"})
			}
		}
	}
	return out
}

// redactURL drops the user info (a proxy's password) from a URL.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		if i := strings.LastIndex(s, "@"); i >= 0 {
			return "…" + s[i:]
		}
		return s
	}
	u.User = url.User("…")
	return u.String()
}

// compatEnvWarnings reports Python nanobot variables with no counterpart.
func compatEnvWarnings(lookup func(string) (string, bool)) []string {
	names := make([]string, 0, len(compatEnvNotes))
	for n := range compatEnvNotes {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		if _, ok := lookup(n); ok && !seen[compatEnvNotes[n]] {
			seen[compatEnvNotes[n]] = true
			out = append(out, fmt.Sprintf("%s: %s", n, compatEnvNotes[n]))
		}
	}
	return out
}
