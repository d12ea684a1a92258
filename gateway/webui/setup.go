package webui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/setup"
	"github.com/nanobot-go/nanobot/internal/redact"
	"github.com/nanobot-go/nanobot/providers"
)

// The setup page walks a first run through what the gateway needs: a
// model provider with a key, a chat channel, the workbench password. It
// saves through the same edits as the settings page (saveEdits); what is
// its own are the live checks (POST /api/setup/check), which send a key
// to a service and so are held to one at a time and checksPerMinute.

// checksPerMinute bounds the live checks of one gateway: enough to fix a
// typo or two, too few to hammer a third party.
const checksPerMinute = 10

// checkGate lets one live check run at a time, and at most
// checksPerMinute in any minute.
type checkGate struct {
	running sync.Mutex // held while a check runs (TryLock: no queue)
	mu      sync.Mutex
	recent  []time.Time // starts of the checks in the last minute
}

// enter admits a check at now, or says how long to wait. A check that is
// admitted must call leave.
func (g *checkGate) enter(now time.Time) (wait time.Duration, ok bool) {
	if !g.running.TryLock() {
		return time.Second, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.recent = slices.DeleteFunc(g.recent, func(t time.Time) bool { return now.Sub(t) >= time.Minute })
	if len(g.recent) >= checksPerMinute {
		g.running.Unlock()
		return g.recent[0].Add(time.Minute).Sub(now), false
	}
	g.recent = append(g.recent, now)
	return 0, true
}

func (g *checkGate) leave() { g.running.Unlock() }

// providerChoice is a provider the setup page offers, with what the config
// holds for it (never the key).
type providerChoice struct {
	Name        string `json:"name"`
	DisplayName string `json:"displayName"`
	// ConfigName is the providers.<name> the config already uses for it
	// ("lmStudio" for lmstudio); the page saves there.
	ConfigName     string      `json:"configName"`
	EnvKey         string      `json:"envKey,omitempty"`
	DefaultAPIBase string      `json:"defaultApiBase,omitempty"`
	Local          bool        `json:"local"`
	KeyOptional    bool        `json:"keyOptional"`
	Checkable      bool        `json:"checkable"`
	APIKey         secretState `json:"apiKey"`
	APIBase        string      `json:"apiBase"`
}

// setupChannel is a channel's setup state plus its connection as the
// running gateway sees it ("" : not running).
type setupChannel struct {
	setup.ChannelState
	State     channels.State `json:"state,omitempty"`
	AllowFrom []string       `json:"allowFrom"`
}

func (s *Server) providerSettings(c *configs.Config) map[string]providers.Settings {
	if s.o.ProviderSettings != nil {
		return s.o.ProviderSettings(c)
	}
	return setup.ProviderSettings(c)
}

func (s *Server) checker() *setup.Checker {
	if s.o.Setup != nil {
		return s.o.Setup
	}
	return s.defaultChecker
}

// configName returns the providers.<name> key of c that stands for spec
// (spec.Name when there is none).
func configName(c *configs.Config, spec providers.ProviderSpec) string {
	for _, name := range sortedKeys(c.Providers) {
		if got, ok := providers.Lookup(name); ok && got.Name == spec.Name {
			return name
		}
	}
	return spec.Name
}

// checkable says whether setup.Checker.Provider can ask spec.
func checkable(spec providers.ProviderSpec) bool {
	return !spec.SignIn && (spec.Backend == providers.BackendAnthropic || spec.Backend == providers.BackendOpenAICompat || spec.Backend == providers.BackendOpenAIResponses)
}

// getSetup is GET /api/setup: what is set up, and what is missing.
func (s *Server) getSetup(w http.ResponseWriter, _ *http.Request) {
	if s.o.ConfigFile == "" {
		writeError(w, http.StatusServiceUnavailable, "", "this gateway was started without a config file path")
		return
	}
	l, tree, _, err := s.loadConfig()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "", "cannot load the config: "+err.Error())
		return
	}
	c := &l.Config
	rep := setup.Inspect(c, s.providerSettings(c))

	var health map[string]channels.Health
	if s.o.Health != nil {
		health = s.o.Health()
	}
	chans := make([]setupChannel, 0, len(rep.Channels))
	for _, ch := range rep.Channels {
		allow := c.Channels.Common(ch.Name).AllowFrom
		if allow == nil {
			allow = []string{}
		}
		chans = append(chans, setupChannel{ChannelState: ch, State: health[ch.Name].State, AllowFrom: allow})
	}

	choices := []providerChoice{}
	for _, spec := range providers.Specs() {
		// A sign-in is made in a terminal (nanobot provider login);
		// Bedrock and Azure want more than a key and a base.
		if spec.SignIn || spec.AWSCredentials || spec.Backend == providers.BackendAzureOpenAI {
			continue
		}
		name := configName(c, spec)
		p := c.Providers[name]
		choices = append(choices, providerChoice{
			Name: spec.Name, DisplayName: spec.DisplayName, ConfigName: name, EnvKey: spec.EnvKey,
			DefaultAPIBase: spec.DefaultAPIBase, Local: spec.IsLocal, KeyOptional: spec.KeyOptional, Checkable: checkable(spec),
			APIKey:  secretState{Key: "apiKey", Set: p.APIKey != "", Ref: isRef(rawString(tree, "providers."+name+".apiKey"))},
			APIBase: p.APIBase,
		})
	}

	var restart []string
	if s.o.RestartNeeded != nil {
		restart = s.o.RestartNeeded()
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"file":      l.Path,
		"model":     rep.Model,
		"channels":  chans,
		"missing":   rep.Missing,
		"waiting":   waitingForRestart(rep.Missing, restart),
		"providers": choices,
		"password": map[string]any{
			"set":    rawString(tree, "gateway.webui.password") != "",
			"active": len(s.auth.hash) > 0,
			// Beyond loopback the workbench is off without one.
			"needed": !s.o.Loopback,
		},
		"restartNeeded": nonNil(restart),
	})
}

// waitingForRestart names the essentials ("model", "channel") the config
// file has but the running gateway does not have yet: saved, they differ
// from what it runs, and they take effect only after a restart. Until
// then a chat still gets no answer from the new provider, so the page
// keeps saying that setup is not finished.
func waitingForRestart(missing, restart []string) []string {
	out := []string{}
	essential := map[string]func(string) bool{
		"model": func(p string) bool {
			return strings.HasPrefix(p, "agents.defaults.model") || strings.HasPrefix(p, "agents.defaults.provider") || strings.HasPrefix(p, "providers.")
		},
		"channel": func(p string) bool { return strings.HasPrefix(p, "channels.") },
	}
	for _, what := range []string{"model", "channel"} {
		if !slices.Contains(missing, what) && slices.ContainsFunc(restart, essential[what]) {
			out = append(out, what)
		}
	}
	return out
}

type checkRequest struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	APIBase string `json:"apiBase"`
	Key     string `json:"key"`
}

// envRef is a key given as an environment variable: $NAME or ${NAME}.
var envRef = regexp.MustCompile(`^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))$`)

// envReference returns the variable a typed key names ($NAME or ${NAME}).
func envReference(typed string) (name string, ok bool) {
	m := envRef.FindStringSubmatch(typed)
	if m == nil {
		return "", false
	}
	return m[1] + m[2], true
}

// postSetupCheck is POST /api/setup/check {kind, name, apiBase, key}: one
// live check of a provider key or a channel token. An empty key checks
// the one saved; an empty apiBase, the one saved or the service's own. It
// answers {ok, checked, detail} (and the models a provider listed); the
// detail never holds the key.
func (s *Server) postSetupCheck(w http.ResponseWriter, r *http.Request) {
	if s.o.ConfigFile == "" {
		writeError(w, http.StatusServiceUnavailable, "", "this gateway was started without a config file path")
		return
	}
	var req checkRequest
	if !readJSON(w, r, &req) {
		return
	}
	req.APIBase, req.Key = strings.TrimSpace(req.APIBase), strings.TrimSpace(req.Key)
	var spec providers.ProviderSpec
	switch req.Kind {
	case "provider":
		var ok bool
		if spec, ok = providers.Lookup(req.Name); !ok {
			writeError(w, http.StatusBadRequest, "name", fmt.Sprintf("unknown provider %q", req.Name))
			return
		}
	case "telegram", "slack", "discord":
		req.Name = req.Kind
	default:
		writeError(w, http.StatusBadRequest, "kind", "want provider, telegram, slack or discord")
		return
	}
	if req.APIBase != "" {
		if u, err := url.Parse(req.APIBase); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			writeError(w, http.StatusBadRequest, "apiBase", "want an http:// or https:// URL")
			return
		}
	}
	if name, ok := envReference(req.Key); ok {
		if req.Key = os.Getenv(name); req.Key == "" {
			writeError(w, http.StatusBadRequest, "key", name+" is not set in the gateway's environment")
			return
		}
	}

	wait, ok := s.checks.enter(s.o.Now())
	if !ok {
		secs := retrySeconds(wait)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		writeError(w, http.StatusTooManyRequests, "", fmt.Sprintf("one check at a time, at most %d a minute: try again in %s", checksPerMinute, time.Duration(secs)*time.Second))
		return
	}
	defer s.checks.leave()

	l, _, _, err := s.loadConfig()
	if err != nil {
		writeError(w, http.StatusConflict, "", "the config file does not load as it is: "+err.Error())
		return
	}
	c := &l.Config
	ctx, cancel := context.WithTimeout(r.Context(), setup.Timeout+5*time.Second)
	defer cancel()

	var out struct {
		OK      bool     `json:"ok"`
		Checked bool     `json:"checked"`
		Detail  string   `json:"detail"`
		Models  []string `json:"models,omitempty"`
	}
	if req.Kind == "provider" {
		saved := c.Providers[configName(c, spec)]
		base := cmp.Or(req.APIBase, saved.APIBase, spec.DefaultAPIBase)
		key := cmp.Or(req.Key, saved.APIKey)
		if key == "" && !spec.KeyOptional && !spec.IsLocal {
			writeError(w, http.StatusBadRequest, "key", "type the key (none is saved for "+spec.DisplayName+")")
			return
		}
		if base == "" {
			writeError(w, http.StatusBadRequest, "apiBase", spec.DisplayName+" needs the address of its API")
			return
		}
		models, err := s.checker().Provider(ctx, spec, base, key)
		out.Checked = !errors.Is(err, setup.ErrNotChecked)
		switch {
		case !out.Checked:
			out.Detail = spec.DisplayName + " keys are not checked here; `nanobot doctor` tries the provider"
		case err != nil:
			out.Detail = spec.DisplayName + ": " + scrubKey(err.Error(), key)
		default:
			out.OK, out.Models = true, models
			out.Detail = fmt.Sprintf("%s answered: %d models", spec.DisplayName, len(models))
		}
	} else {
		g, _ := setup.GuideFor(req.Kind)
		raw := c.Channels.Platforms[req.Kind]
		savedBase, _ := raw["apiBase"].(string)
		savedKey, _ := raw[g.Checked].(string)
		base, key := cmp.Or(req.APIBase, savedBase), cmp.Or(req.Key, savedKey)
		if key == "" {
			writeError(w, http.StatusBadRequest, "key", "type the token (none is saved for "+req.Kind+")")
			return
		}
		out.Checked = true
		var who string
		switch req.Kind {
		case "telegram":
			if who, err = s.checker().Telegram(ctx, base, key); err == nil {
				out.Detail = "Telegram knows this bot: @" + who
			}
		case "slack":
			if who, err = s.checker().Slack(ctx, base, key); err == nil {
				out.Detail = "Slack accepted the token: workspace " + who
			}
		case "discord":
			if who, err = s.checker().Discord(ctx, base, key); err == nil {
				out.Detail = "Discord knows this bot: " + who
			}
		}
		if err != nil {
			out.Detail = strings.ToUpper(req.Kind[:1]) + req.Kind[1:] + ": " + scrubKey(err.Error(), key)
		}
		out.OK = err == nil
	}
	s.log.Info("workbench: setup check", "kind", req.Kind, "name", req.Name, "ok", out.OK, "checked", out.Checked)
	writeJSON(w, http.StatusOK, out)
}

// scrubKey takes key out of msg (the checker already does; a second look
// costs nothing where a leak would cost the key).
func scrubKey(msg, key string) string {
	if key == "" {
		return msg
	}
	return strings.ReplaceAll(msg, key, redact.Mask)
}

// postSetupPassword is POST /api/setup/password {password}: the first
// workbench password, stored as gateway.webui.password (a bcrypt hash),
// taking effect at the next start. Once one is set it is changed with
// `nanobot webui set-password` on the gateway's machine, not from a
// browser.
func (s *Server) postSetupPassword(w http.ResponseWriter, r *http.Request) {
	if s.o.ConfigFile == "" {
		writeError(w, http.StatusServiceUnavailable, "", "this gateway was started without a config file path")
		return
	}
	var body struct {
		Password string `json:"password"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	hash, err := HashPassword(body.Password)
	if err != nil {
		writeError(w, http.StatusBadRequest, "password", strings.TrimPrefix(err.Error(), "webui: "))
		return
	}
	s.saveEdits(w, []edit{{path: "gateway.webui.password", value: hash}}, func(tree map[string]any) (int, *apiError) {
		if rawString(tree, "gateway.webui.password") != "" {
			return http.StatusConflict, &apiError{Path: "password", Error: "a workbench password is set already; change it with `nanobot webui set-password` on the gateway's machine"}
		}
		return 0, nil
	})
}
