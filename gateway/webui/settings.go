package webui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/atomicfile"
	"github.com/nanobot-go/nanobot/providers"
)

// Settings are edited in config.json's own bytes, never by re-encoding
// the typed Config or the file's tree: only the edited values change, and
// "${VAR}" references, keys this version does not know, the layout and
// everything not edited stay as they were. Every edit is checked by
// loading the result exactly as the gateway and the CLI load it
// (configs.Load) before it replaces the file; the previous file is kept as
// config.json.bak. Secret values (provider keys, channel tokens) are
// write-only: responses say whether one is set, never what it is.

// setting is one editable path pattern; "*" is one name (a provider, a
// channel).
type setting struct {
	pattern string
	kind    string // "string", "bool", "number", "strings"
	live    bool   // applied without a restart
}

var editable = []setting{
	{"agents.defaults.model", "string", false},
	{"agents.defaults.provider", "string", false},
	{"providers.*.apiKey", "string", false},
	{"providers.*.apiBase", "string", false},
	{"channels.*.enabled", "bool", false},
	{"channels.*.allowFrom", "strings", true},
	{"gateway.heartbeat.enabled", "bool", false},
	{"gateway.heartbeat.intervalS", "number", false},
	{"tools.restrictToWorkspace", "bool", false},
	{"tools.exec.sandbox", "string", false},
}

// nameSegment is what a provider's or channel's name in a path may be: no
// wildcard, no separator, nothing a shell or a JSON path would read twice.
var nameSegment = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)

// lookupSetting finds the setting for a dotted path; a channel's secret
// keys (token, appSecret, ...) are editable strings too. A "*" in a
// pattern stands for one name, never for the literal "*".
func lookupSetting(path string) (setting, bool) {
	segs := strings.Split(path, ".")
	for _, seg := range segs {
		if !nameSegment.MatchString(seg) {
			return setting{}, false
		}
	}
	for _, s := range editable {
		ps := strings.Split(s.pattern, ".")
		if len(ps) != len(segs) {
			continue
		}
		ok := true
		for i := range ps {
			if segs[i] == "" || (ps[i] != "*" && ps[i] != segs[i]) {
				ok = false
				break
			}
		}
		if ok {
			return s, true
		}
	}
	if len(segs) == 3 && segs[0] == "channels" && segs[1] != "" && configs.IsSecretKey(segs[2]) {
		return setting{pattern: path, kind: "string"}, true
	}
	return setting{}, false
}

func isSecretPath(path string) bool {
	return configs.IsSecretKey(path[strings.LastIndexByte(path, '.')+1:])
}

type secretState struct {
	Key string `json:"key"`
	Set bool   `json:"set"`
	// Ref: the file holds a "${VAR}" reference, not the value.
	Ref bool `json:"ref"`
}

type providerView struct {
	Name    string      `json:"name"`
	APIKey  secretState `json:"apiKey"`
	APIBase string      `json:"apiBase"`
}

type channelView struct {
	Name      string        `json:"name"`
	Enabled   bool          `json:"enabled"`
	AllowFrom []string      `json:"allowFrom"`
	Secrets   []secretState `json:"secrets"`
}

// load reads the config as the gateway does, plus the raw file tree.
func (s *Server) loadConfig() (*configs.Loaded, map[string]any, []byte, error) {
	raw, err := os.ReadFile(s.o.ConfigFile)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil, fmt.Errorf("read %s: %w", s.o.ConfigFile, err)
	}
	tree := map[string]any{}
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf"))))
		dec.UseNumber()
		if err := dec.Decode(&tree); err != nil {
			return nil, nil, nil, fmt.Errorf("%s is not a JSON object: %w", s.o.ConfigFile, err)
		}
	}
	l, err := configs.Load(configs.Options{Path: s.o.ConfigFile, Platforms: s.o.Platforms})
	if err != nil {
		return nil, nil, nil, err
	}
	return l, tree, raw, nil
}

// rawString returns the string at a dotted path of the raw tree.
func rawString(tree map[string]any, path string) string {
	var cur any = tree
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[k]
	}
	v, _ := cur.(string)
	return v
}

func isRef(v string) bool { return strings.Contains(v, "${") }

// getSettings is GET /api/settings.
func (s *Server) getSettings(w http.ResponseWriter, _ *http.Request) {
	if s.o.ConfigFile == "" {
		writeError(w, http.StatusServiceUnavailable, "", "this gateway was started without a config file path")
		return
	}
	l, tree, _, err := s.loadConfig()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "", "cannot load the config: "+err.Error())
		return
	}
	c := l.Config
	providers := []providerView{}
	for _, name := range sortedKeys(c.Providers) {
		p := c.Providers[name]
		path := "providers." + name + ".apiKey"
		providers = append(providers, providerView{Name: name, APIBase: p.APIBase,
			APIKey: secretState{Key: "apiKey", Set: p.APIKey != "", Ref: isRef(rawString(tree, path))}})
	}
	chans := []channelView{}
	for _, name := range c.Channels.Names() {
		cc := c.Channels.Common(name)
		v := channelView{Name: name, Enabled: cc.Enabled, AllowFrom: cc.AllowFrom, Secrets: []secretState{}}
		if v.AllowFrom == nil {
			v.AllowFrom = []string{}
		}
		for _, k := range sortedKeys(c.Channels.Platforms[name]) {
			if !configs.IsSecretKey(k) {
				continue
			}
			val, _ := c.Channels.Platforms[name][k].(string)
			v.Secrets = append(v.Secrets, secretState{Key: k, Set: val != "", Ref: isRef(rawString(tree, "channels."+name+"."+k))})
		}
		chans = append(chans, v)
	}
	var restart []string
	if s.o.RestartNeeded != nil {
		restart = s.o.RestartNeeded()
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"restartNeeded": nonNil(restart),
		"file":          l.Path,
		"agent":         map[string]any{"model": c.Agents.Defaults.Model, "provider": c.Agents.Defaults.Provider},
		"providers":     providers,
		"channels":      chans,
		"heartbeat":     map[string]any{"enabled": c.Gateway.Heartbeat.Enabled, "intervalS": c.Gateway.Heartbeat.IntervalS},
		"tools":         map[string]any{"restrictToWorkspace": c.Tools.RestrictToWorkspace, "sandbox": c.Tools.Exec.Sandbox},
	})
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

type change struct {
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value"`
}

// checkValue decodes a change's value as its setting's kind.
func checkValue(st setting, raw json.RawMessage) (any, string) {
	switch st.kind {
	case "string":
		var v string
		if json.Unmarshal(raw, &v) != nil {
			return nil, "want a string"
		}
		return strings.TrimSpace(v), ""
	case "bool":
		var v bool
		if json.Unmarshal(raw, &v) != nil {
			return nil, "want true or false"
		}
		return v, ""
	case "number":
		var v json.Number
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if dec.Decode(&v) != nil {
			return nil, "want a number"
		}
		return v, ""
	case "strings":
		var v []string
		if json.Unmarshal(raw, &v) != nil {
			return nil, "want a list of strings"
		}
		out := []any{}
		for _, e := range v {
			if e = strings.TrimSpace(e); e != "" {
				out = append(out, e)
			}
		}
		return out, ""
	}
	return nil, "not editable"
}

// secretValue is what a typed secret is saved as: "$NAME" or "${NAME}"
// names a variable of the gateway's environment and is saved as the
// "${NAME}" reference the loader expands, once NAME is known to be set
// there (the setup page's check reads keys the same way); anything else is
// the secret itself. msg says why a reference is refused.
func secretValue(typed string) (value any, msg string) {
	name, ok := envReference(typed)
	if !ok {
		return typed, ""
	}
	if os.Getenv(name) == "" {
		return nil, name + " is not set in the gateway's environment"
	}
	return "${" + name + "}", ""
}

// patchSettings is PATCH /api/settings {"changes": [{"path", "value"}]}.
func (s *Server) patchSettings(w http.ResponseWriter, r *http.Request) {
	if s.o.ConfigFile == "" {
		writeError(w, http.StatusServiceUnavailable, "", "this gateway was started without a config file path")
		return
	}
	var body struct {
		Changes []change `json:"changes"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	if len(body.Changes) == 0 {
		writeError(w, http.StatusBadRequest, "changes", "nothing to change")
		return
	}
	edits := make([]edit, 0, len(body.Changes))
	for _, c := range body.Changes {
		st, ok := lookupSetting(c.Path)
		if !ok {
			writeError(w, http.StatusBadRequest, c.Path, "not editable from the workbench (edit config.json)")
			return
		}
		v, msg := checkValue(st, c.Value)
		if msg == "" && isSecretPath(c.Path) {
			v, msg = secretValue(v.(string))
		}
		if msg != "" {
			writeError(w, http.StatusBadRequest, c.Path, msg)
			return
		}
		edits = append(edits, edit{path: c.Path, value: v, live: st.live})
	}
	s.saveEdits(w, edits, nil)
}

// edit is one checked change to the config's tree.
type edit struct {
	path  string
	value any
	live  bool // applied without a restart
}

// errChangedMeanwhile: config.json changed between reading and saving.
var errChangedMeanwhile = errors.New("config.json changed meanwhile")

// saveEdits makes edits in config.json's own bytes (configs.PatchJSON) and
// saves it, under settingsMu and the file's lock, if the result loads as
// the gateway loads it; it answers the request either way. refuse, when
// given, looks at the tree as it is before the edits and returns a non-nil
// apiError (with its status) to refuse them.
func (s *Server) saveEdits(w http.ResponseWriter, edits []edit, refuse func(tree map[string]any) (int, *apiError)) {
	s.settingsMu.Lock()
	defer s.settingsMu.Unlock()

	cur, tree, old, err := s.loadConfig()
	if err != nil {
		writeError(w, http.StatusConflict, "", "the config file does not load as it is, so the workbench will not edit it: "+err.Error())
		return
	}
	if refuse != nil {
		if status, e := refuse(tree); e != nil {
			writeJSON(w, status, e)
			return
		}
	}
	// Each edit rewrites only its value's bytes: the layout, key order and
	// everything else in the file stay as the user wrote them.
	var live, restart []string
	out := old
	for _, e := range edits {
		if out, err = configs.PatchJSON(out, e.path, e.value); err != nil {
			writeError(w, http.StatusBadRequest, e.path, err.Error())
			return
		}
		if e.live {
			live = append(live, e.path)
		} else {
			restart = append(restart, e.path)
		}
	}
	next, probs, warnings, err := s.check(out)
	if err != nil {
		s.internalError(w, "check config", err, "cannot check the new config")
		return
	}
	// A name or key the schema does not know loads with a warning and is
	// ignored: refuse to write it rather than save a setting that does
	// nothing (or lands where nothing looks, like a channel named "*").
	for _, wn := range warnings {
		if !slices.Contains(cur.Warnings, wn) {
			path, _, _ := strings.Cut(strings.TrimPrefix(wn, "config: "), ":")
			probs = append(probs, configs.FieldError{Path: path, Msg: wn})
		}
	}
	if next != nil {
		probs = append(probs, unknownProvider(next, edits)...)
	}
	if len(probs) > 0 {
		list := make([]apiError, 0, len(probs))
		for _, p := range probs {
			msg := p.Msg
			if isSecretPath(p.Path) {
				msg = "invalid value" // never echo what may be a secret
			}
			list = append(list, apiError{Path: p.Path, Error: msg})
		}
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": list[0].Error, "path": list[0].Path, "problems": list})
		return
	}
	// Under the file's lock, and only if nobody (the gateway remembering
	// an approved command, /skill disable, the CLI) saved it meanwhile.
	var backupErr error
	err = atomicfile.Update(s.o.ConfigFile, 0o600, func(now []byte) ([]byte, error) {
		if !bytes.Equal(now, old) {
			return nil, errChangedMeanwhile
		}
		if len(old) > 0 {
			if backupErr = atomicfile.Write(s.o.ConfigFile+".bak", old, 0o600); backupErr != nil {
				return nil, backupErr
			}
		}
		return out, nil
	})
	switch {
	case errors.Is(err, errChangedMeanwhile):
		writeError(w, http.StatusConflict, "", "config.json changed while this was saved; nothing changed, load the page again")
		return
	case backupErr != nil:
		s.internalError(w, "back up config", err, "cannot write the backup config.json.bak; nothing changed")
		return
	case err != nil:
		s.internalError(w, "write config", err, "cannot write the config")
		return
	}
	// Applied after every save, not only one with live settings: the
	// gateway then also knows at once which saved settings wait for a
	// restart (GET /api/setup and /api/settings say so).
	if s.o.Apply != nil {
		s.o.Apply(next)
	}
	s.log.Info("workbench: config changed", "live", live, "restart_needed", restart)
	writeJSON(w, http.StatusOK, map[string]any{"saved": true, "applied": nonNil(live), "restartNeeded": nonNil(restart)})
}

// unknownProvider refuses an agents.defaults.provider among edits that
// names neither a provider nanobot knows nor one the config sets up (the
// gateway would only find out when the model is first asked).
func unknownProvider(next *configs.Config, edits []edit) []configs.FieldError {
	const path = "agents.defaults.provider"
	if !slices.ContainsFunc(edits, func(e edit) bool { return e.path == path }) {
		return nil
	}
	p := next.Agents.Defaults.Provider
	if p == "" || p == "auto" {
		return nil
	}
	if _, ok := providers.Lookup(p); ok {
		return nil
	}
	if _, ok := next.Providers[p]; ok {
		return nil
	}
	return []configs.FieldError{{Path: path, Msg: fmt.Sprintf("unknown provider %q (the names are in docs/providers.md; \"auto\" picks one from the model)", p)}}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// check loads data as a config file next to the real one (same folder, so
// the same derived paths) the way the gateway does.
func (s *Server) check(data []byte) (*configs.Config, []configs.FieldError, []string, error) {
	f, err := os.CreateTemp(filepath.Dir(s.o.ConfigFile), ".config-check-*.json")
	if err != nil {
		return nil, nil, nil, err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, nil, nil, err
	}
	if err := f.Close(); err != nil {
		return nil, nil, nil, err
	}
	l, err := configs.Load(configs.Options{Path: f.Name(), Platforms: s.o.Platforms})
	var ce *configs.Error
	if errors.As(err, &ce) {
		if len(ce.Problems) > 0 {
			return nil, ce.Problems, nil, nil
		}
		return nil, []configs.FieldError{{Msg: ce.Err.Error()}}, nil, nil
	}
	if err != nil {
		return nil, nil, nil, err
	}
	return &l.Config, nil, l.Warnings, nil
}
