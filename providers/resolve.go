package providers

import (
	"fmt"
	"maps"
	"sort"
	"strings"
)

// MatchLevel says which rule chose the provider, in priority order.
type MatchLevel int

// Match levels.
const (
	MatchForced   MatchLevel = 1 // the config names the provider
	MatchPrefix   MatchLevel = 2 // "name/model"
	MatchKeyword  MatchLevel = 3 // a keyword in the model name
	MatchLocal    MatchLevel = 4 // a local server with an apiBase
	MatchFallback MatchLevel = 5 // the first provider with a key
)

func (l MatchLevel) String() string {
	switch l {
	case MatchForced:
		return "forced"
	case MatchPrefix:
		return "prefix"
	case MatchKeyword:
		return "keyword"
	case MatchLocal:
		return "local"
	case MatchFallback:
		return "fallback"
	}
	return fmt.Sprintf("MatchLevel(%d)", int(l))
}

// Resolution is the outcome of matching a model to a provider.
type Resolution struct {
	Spec ProviderSpec
	// Provider is Spec.Name.
	Provider string
	Level    MatchLevel
	// Reason explains the choice in a few words, for nanobot status.
	Reason string
	// RequestedModel is the model as configured; Model is what is sent.
	RequestedModel string
	Model          string
	// The effective settings (APIBase with the default applied).
	APIKey       string
	APIBase      string
	ExtraHeaders map[string]string
	APIVersion   string
	// API is Settings.API (APIResponses switches the backend).
	API       string
	ExtraBody map[string]any
	Proxy     string
	// Region and Profile are the AWS settings (bedrock).
	Region, Profile string
	// NoTextToolCalls is Settings.NoTextToolCalls.
	NoTextToolCalls bool
}

// Resolve picks the provider for a model. The rules, first match wins:
//
//  1. forced names a provider (config "provider": "deepseek"); "" and "auto" mean none.
//  2. the model starts with "name/" for a known, configured provider (a
//     local server with a default address counts without any settings).
//  3. a provider's keyword appears in the model name ("deepseek-chat"),
//     among configured providers only: a keyword never routes to a provider
//     the user has not set up.
//  4. a local server (or the custom endpoint) with an apiBase.
//  5. the first provider, in registry order, with an API key, else the
//     first signed-in subscription provider.
//
// Configured means: an API key, or an apiBase for providers that need no
// key, or stored sign-in credentials for sign-in providers, plus an
// endpoint (a default or the config's). configuredMap is keyed
// by config name; "lmStudio" and "azure-openai" spellings are accepted.
// An entry whose spec has KeyedAs and whose settings carry an apiKey
// counts as the provider KeyedAs names (nanobot's xaiGrok with a key is
// xai), unless that provider has a key of its own.
//
// Model is the name to send: the provider's own "name/" prefix is removed
// (for gateways only when what remains still names a vendor model, so
// "openrouter/auto" is kept); other prefixes are kept, so a gateway
// receives "anthropic/claude-3.5" as written.
func Resolve(model, forced string, configuredMap map[string]Settings) (Resolution, error) {
	model = strings.TrimSpace(model)
	if model == "" {
		return Resolution{}, fmt.Errorf("resolve provider: model name is empty")
	}
	cfg := make(map[string]Settings, len(configuredMap))
	var named []string
	// keyed: entries that stand for another provider because they carry
	// an apiKey (see ProviderSpec.KeyedAs), entry name -> provider name.
	keyed := map[string]string{}
	keyedSettings := map[string]Settings{}
	for name, st := range configuredMap {
		if spec, ok := Lookup(name); ok {
			if spec.KeyedAs != "" && st.APIKey != "" {
				keyed[spec.Name] = spec.KeyedAs
				keyedSettings[spec.KeyedAs] = st
				continue
			}
			cfg[spec.Name] = st
		} else if st.APIBase != "" {
			named = append(named, name)
		}
	}
	for to, st := range keyedSettings {
		// The provider's own entry wins when it has a key of its own.
		if own, ok := cfg[to]; !ok || own.APIKey == "" {
			cfg[to] = st
		}
	}
	// Any other name with an apiBase is an OpenAI-compatible endpoint of
	// that name (the Python nanobot's custom-named providers), matched
	// after the registry's own.
	sort.Strings(named)
	all := specs[:len(specs):len(specs)]
	for _, name := range named {
		spec := customNamed(name)
		all = append(all, spec)
		cfg[spec.Name] = configuredMap[name]
	}
	lookup := func(n string) (ProviderSpec, bool) {
		if spec, ok := Lookup(n); ok {
			if to, ok := keyed[spec.Name]; ok {
				return Lookup(to)
			}
			return spec, true
		}
		for _, spec := range all[len(specs):] {
			if flatName(spec.Name) == flatName(n) {
				return spec, true
			}
		}
		return ProviderSpec{}, false
	}
	res, err := match(model, forced, cfg, all, lookup)
	if err != nil {
		return Resolution{}, err
	}
	// "xai-grok/grok-4" resolved to xai through a keyed entry sends
	// "grok-4", as "xai/grok-4" would.
	if prefix, rest, ok := strings.Cut(model, "/"); ok && rest != "" && res.Spec.StripModelPrefix {
		if spec, ok := Lookup(prefix); ok && keyed[spec.Name] == res.Provider {
			res.Model = rest
		}
	}
	return res, nil
}

// match applies Resolve's rules to the indexed settings: cfg by registry
// name, all the specs in matching order (the registry's, then the
// config-named endpoints), lookup finding a spec by any spelling.
func match(model, forced string, cfg map[string]Settings, all []ProviderSpec, lookup func(string) (ProviderSpec, bool)) (Resolution, error) {
	lower := strings.ToLower(model)

	if f := normalizeName(forced); f != "" && f != "auto" {
		spec, ok := lookup(forced)
		if !ok {
			return Resolution{}, fmt.Errorf("resolve provider: unknown provider %q (known: %s)", forced, knownNames())
		}
		st := cfg[spec.Name]
		// An AWS provider may take everything from the environment.
		if !spec.AWSCredentials && (spec.SignIn && !st.SignedIn || spec.DefaultAPIBase == "" && st.APIBase == "" || !spec.SignIn && !spec.KeyOptional && !spec.EntraID && st.APIKey == "" && !spec.IsLocal) {
			return Resolution{}, fmt.Errorf("resolve provider: provider %q is forced but not configured: %s", spec.Name, howToConfigure(spec))
		}
		return resolution(spec, st, model, MatchForced, fmt.Sprintf("provider %q set in config", spec.Name)), nil
	}

	if prefix, rest, ok := strings.Cut(model, "/"); ok {
		// A local server with a default address needs no config at all
		// when the model names it ("ollama/llama3.2").
		if spec, ok := lookup(prefix); ok && (configured(spec, cfg[spec.Name]) || spec.IsLocal && spec.DefaultAPIBase != "") {
			res := resolution(spec, cfg[spec.Name], model, MatchPrefix, fmt.Sprintf("model prefix %q", prefix+"/"))
			if spec.custom && rest != "" {
				res.Model = rest
			}
			return res, nil
		}
	}

	for _, spec := range all {
		st := cfg[spec.Name]
		if !configured(spec, st) {
			continue
		}
		for _, kw := range spec.Keywords {
			if keywordIn(lower, kw) {
				return resolution(spec, st, model, MatchKeyword, fmt.Sprintf("keyword %q in model name", kw)), nil
			}
		}
	}

	for _, spec := range all {
		if st := cfg[spec.Name]; spec.KeyOptional && !spec.AWSCredentials && st.APIBase != "" {
			return resolution(spec, st, model, MatchLocal, "local endpoint "+st.APIBase), nil
		}
	}

	for _, spec := range all {
		if st := cfg[spec.Name]; st.APIKey != "" && configured(spec, st) {
			return resolution(spec, st, model, MatchFallback, "first provider with an API key"), nil
		}
	}

	for _, spec := range specs {
		if st := cfg[spec.Name]; spec.SignIn && configured(spec, st) {
			return resolution(spec, st, model, MatchFallback, "first signed-in provider"), nil
		}
	}
	return Resolution{}, fmt.Errorf("resolve provider: no provider configured for model %q: %s", model, unconfiguredHint(model, lookup))
}

// unconfiguredHint says what would make a model usable: the provider its
// prefix or a keyword names, else any key.
func unconfiguredHint(model string, lookup func(string) (ProviderSpec, bool)) string {
	if prefix, _, ok := strings.Cut(model, "/"); ok {
		if spec, ok := lookup(prefix); ok {
			return howToConfigure(spec) + " in the config file"
		}
	}
	lower := strings.ToLower(model)
	for _, spec := range specs {
		for _, kw := range spec.Keywords {
			if keywordIn(lower, kw) {
				return howToConfigure(spec) + " in the config file (or a gateway's key, such as providers.openrouter.apiKey)"
			}
		}
	}
	return "set an API key in the config file (for example providers.openrouter.apiKey or providers.anthropic.apiKey), or providers.ollama.apiBase for a local server"
}

// keywordIn matches a keyword at a word start of the model name, so "o1"
// finds "o1-mini" but not "llamao1"; "gpt" finds "openai/gpt-4o".
func keywordIn(model, kw string) bool {
	for i := 0; i < len(model); {
		j := strings.Index(model[i:], kw)
		if j < 0 {
			return false
		}
		at := i + j
		if at == 0 || !isAlnum(model[at-1]) {
			return true
		}
		i = at + 1
	}
	return false
}

func isAlnum(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9'
}

func resolution(spec ProviderSpec, st Settings, model string, level MatchLevel, reason string) Resolution {
	base := st.APIBase
	if base == "" {
		base = spec.DefaultAPIBase
	}
	headers := st.ExtraHeaders
	if len(spec.Headers) > 0 {
		headers = make(map[string]string, len(spec.Headers)+len(st.ExtraHeaders))
		maps.Copy(headers, spec.Headers)
		for k, v := range st.ExtraHeaders {
			for d := range spec.Headers {
				if strings.EqualFold(d, k) {
					delete(headers, d) // the config's spelling wins
				}
			}
			headers[k] = v
		}
	}
	return Resolution{
		Spec: spec, Provider: spec.Name, Level: level, Reason: reason,
		RequestedModel: model, Model: WireModel(spec, model),
		APIKey: st.APIKey, APIBase: base, ExtraHeaders: headers, APIVersion: st.APIVersion,
		API:       st.API,
		ExtraBody: st.ExtraBody, Proxy: st.Proxy,
		Region: st.Region, Profile: st.Profile, NoTextToolCalls: st.NoTextToolCalls,
	}
}

// customNamed is the spec of a provider the registry does not know, named
// in the config and configured by its apiBase: an OpenAI-compatible
// endpoint like "custom", under the config's name.
func customNamed(name string) ProviderSpec {
	spec, _ := Lookup("custom")
	spec.Name, spec.DisplayName, spec.EnvKey, spec.custom = name, name, "", true
	return spec
}

// flatName folds case and separators: "companyProxy", "company_proxy" and
// "company-proxy" are one name.
func flatName(s string) string { return strings.ReplaceAll(normalizeName(s), "_", "") }

// WireModel is the model name spec expects for a configured model name.
func WireModel(spec ProviderSpec, model string) string {
	if !spec.StripModelPrefix {
		return model
	}
	prefix, rest, ok := strings.Cut(model, "/")
	if !ok || rest == "" {
		return model
	}
	if p, ok := Lookup(prefix); !ok || p.Name != spec.Name {
		return model
	}
	if spec.IsGateway && !strings.Contains(rest, "/") {
		return model
	}
	return rest
}
