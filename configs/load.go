package configs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/v2"
)

// EnvPrefix starts every environment variable that overrides a config key.
// Nesting uses "__": NANOBOT_AGENTS__DEFAULTS__MODEL=gpt-4o sets
// agents.defaults.model. Variables without "__" (NANOBOT_CONFIG, ...) are not
// config keys.
const EnvPrefix = "NANOBOT_"

// Options control Load.
type Options struct {
	// Path is the config file; "" means DefaultPath(). A missing file is not
	// an error: the built-in defaults apply.
	Path string
	// Environ supplies the environment (KEY=value); nil means os.Environ().
	Environ []string
	// Overrides are command-line values by dotted path
	// ("gateway.port": 8080), applied last.
	Overrides map[string]any
	// Platforms maps a channel platform name to its typed config struct (a
	// value, e.g. telegram.Config{}), so platform keys are type-checked and
	// typos reported at load. Platforms not listed are checked for the
	// common keys only; a NotBuilt value marks one the binary lacks.
	Platforms map[string]any
}

// NotBuilt stands in Options.Platforms for a platform adapter the binary was
// built without. Its settings are checked for the keys every channel shares
// only, and naming it in config.json is a warning that says Why.
type NotBuilt struct{ Why string }

// typedPlatform is the config type of a platform that is in the binary.
func typedPlatform(platforms map[string]any, name string) (reflect.Type, bool) {
	typed, ok := platforms[name]
	if !ok {
		return nil, false
	}
	if _, absent := typed.(NotBuilt); absent {
		return nil, false
	}
	return reflect.TypeOf(typed), true
}

// Loaded is a loaded configuration and what loading found.
type Loaded struct {
	Config Config
	// Path is the absolute config file path.
	Path string
	// Exists is false when no file was found and defaults are in use.
	Exists bool
	// Warnings are non-fatal findings (unknown keys, ignored variables).
	Warnings []string
	// Migrated describes keys moved from older locations (in memory only).
	Migrated []string
	// Compat lists the Python nanobot options the file uses that are not
	// simply carried over (their warnings are in Warnings too).
	Compat []CompatFinding
	// Paths are the instance folders derived from Path.
	Paths Paths

	expansions map[string]expansion
}

// Error is a config that cannot be used. Its message is one line naming the
// file and every offending JSON path.
type Error struct {
	File     string
	Problems []FieldError
	Err      error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config ")
	b.WriteString(e.File)
	b.WriteString(": ")
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	for i, p := range e.Problems {
		if i > 0 || e.Err != nil {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Load reads the configuration in layers: built-in defaults, then the
// config file (migrated, ${VAR}-expanded), then NANOBOT_ environment
// variables, then opts.Overrides. The result is type-checked and validated;
// any problem is returned as an *Error naming its JSON path.
func Load(opts Options) (*Loaded, error) {
	path := opts.Path
	if path == "" {
		path = DefaultPath()
	}
	l := &Loaded{Path: path}
	l.Paths = PathsFor(path, &Config{}) // for the absolute path; redone below
	l.Path = l.Paths.ConfigFile
	fail := func(probs []FieldError, err error) (*Loaded, error) {
		return nil, &Error{File: l.Path, Problems: probs, Err: err}
	}

	k := koanf.New(".")
	defTree, err := toTree(Default())
	if err != nil {
		return fail(nil, err)
	}
	if err := k.Load(confmap.Provider(defTree, ""), nil); err != nil {
		return fail(nil, err)
	}
	for _, layer := range []func(*koanf.Koanf, Options) ([]FieldError, error){l.loadFile, l.loadEnv, loadOverrides} {
		if probs, err := layer(k, opts); len(probs) > 0 || err != nil {
			return fail(probs, err)
		}
	}

	merged := k.Raw()
	ck := &checker{platforms: opts.Platforms}
	ck.check("", merged, reflect.TypeFor[Config]())
	if len(ck.errs) > 0 {
		return fail(ck.errs, nil)
	}
	b, err := json.Marshal(merged)
	if err != nil {
		return fail(nil, err)
	}
	if err := json.Unmarshal(b, &l.Config); err != nil {
		return fail(nil, err)
	}
	applyEntryDefaults(&l.Config)
	l.Warnings = append(l.Warnings, transcriptionWarnings(&l.Config)...)
	if probs := l.Config.Validate(); len(probs) > 0 {
		return fail(probs, nil)
	}
	l.Warnings = append(l.Warnings, l.Config.AgentWarnings()...)
	l.rememberExpansions()
	l.Paths = PathsFor(l.Path, &l.Config)
	return l, nil
}

// loadFile is the file layer: config.json, migrated, ${VAR}-expanded and
// type-checked (its own errors name the file's paths).
func (l *Loaded) loadFile(k *koanf.Koanf, opts Options) ([]FieldError, error) {
	data, err := os.ReadFile(l.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	}
	l.Exists = true
	tree, err := parseJSON(data)
	if err != nil {
		return nil, err
	}
	l.Migrated = migrate(tree)
	l.Compat = applyCompat(tree, opts.Platforms)
	for _, f := range l.Compat {
		if f.Status == CompatSame {
			l.Migrated = append(l.Migrated, f.String())
		} else {
			l.Warnings = append(l.Warnings, f.String())
		}
	}
	orig, probs := expandEnv(tree, envLookup(opts.Environ))
	if len(probs) > 0 {
		return probs, nil
	}
	ck := &checker{platforms: opts.Platforms}
	ck.check("", tree, reflect.TypeFor[Config]())
	if len(ck.errs) > 0 {
		return ck.errs, nil
	}
	l.Warnings = append(l.Warnings, ck.warnings...)
	l.expansions = map[string]expansion{}
	for p, o := range orig {
		l.expansions[p] = expansion{original: o}
	}
	return nil, k.Load(confmap.Provider(tree, ""), nil)
}

// loadEnv is the environment layer (NANOBOT_..., "__" nesting).
func (l *Loaded) loadEnv(k *koanf.Koanf, opts Options) ([]FieldError, error) {
	var probs []FieldError
	environ := opts.Environ
	if environ == nil {
		environ = os.Environ()
	}
	ep := env.Provider(envDelim, env.Opt{
		Prefix:      EnvPrefix,
		EnvironFunc: func() []string { return environ },
		TransformFunc: func(name, value string) (string, any) {
			key, val, warn, perr := envToKey(name, value, opts.Platforms)
			if perr != nil {
				probs = append(probs, *perr)
			}
			if warn != "" {
				l.Warnings = append(l.Warnings, warn)
			}
			return key, val
		},
	})
	if err := k.Load(ep, nil); err != nil {
		return nil, err
	}
	l.Warnings = append(l.Warnings, compatEnvWarnings(envLookup(environ))...)
	return probs, nil
}

// loadOverrides is the command-line layer.
func loadOverrides(k *koanf.Koanf, opts Options) ([]FieldError, error) {
	if len(opts.Overrides) == 0 {
		return nil, nil
	}
	// Round-trip through JSON so Go values (int, []string) take the shapes
	// the checker expects.
	var ov map[string]any
	b, err := json.Marshal(opts.Overrides)
	if err == nil {
		err = json.Unmarshal(b, &ov)
	}
	if err != nil {
		return nil, fmt.Errorf("command-line overrides: %w", err)
	}
	return nil, k.Load(confmap.Provider(ov, "."), nil)
}

// rememberExpansions keeps the expanded values of ${VAR} references, so a
// save can restore the references.
func (l *Loaded) rememberExpansions() {
	if len(l.expansions) == 0 {
		return
	}
	final, _ := toTree(l.Config)
	for p, e := range l.expansions {
		if v, ok := valueAt(final, p).(string); ok {
			e.expanded = v
			l.expansions[p] = e
		}
	}
}

// applyEntryDefaults fills defaults of map entries, which JSON decoding
// cannot know.
func applyEntryDefaults(c *Config) {
	def := MCPServerDefaults()
	for name, s := range c.Tools.MCPServers {
		if s.ToolTimeout == 0 {
			s.ToolTimeout = def.ToolTimeout
		}
		if s.EnabledTools == nil {
			s.EnabledTools = def.EnabledTools
		}
		if s.Type == "" {
			if s.Command != "" {
				s.Type = "stdio"
			} else if s.URL != "" {
				s.Type = "streamableHttp"
			}
		}
		c.Tools.MCPServers[name] = s
	}
}

func toTree(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}

// parseJSON decodes a config file, reporting syntax errors by line and
// column.
func parseJSON(data []byte) (map[string]any, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimSpace(data)) == 0 {
		return map[string]any{}, nil
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := lineCol(data, se.Offset)
			return nil, fmt.Errorf("invalid JSON at line %d, column %d: %s", line, col, se.Error())
		}
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want a JSON object at the top level, got %s", jsonKind(v))
	}
	return m, nil
}

func lineCol(data []byte, offset int64) (int, int) {
	line, col := 1, 1
	for i := int64(0); i < offset-1 && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

func envLookup(environ []string) func(string) (string, bool) {
	if environ == nil {
		return os.LookupEnv
	}
	return func(name string) (string, bool) {
		for i := len(environ) - 1; i >= 0; i-- {
			k, v, ok := strings.Cut(environ[i], "=")
			if ok && k == name {
				return v, true
			}
		}
		return "", false
	}
}

const envDelim = "\x1f"

// envToKey maps NANOBOT_A__B__C to the config path a.b.c, matching each
// segment to a field name case-insensitively (with or without underscores),
// and converts the value to the field's type. Map keys (provider names,
// server names) are lowercased.
func envToKey(name, value string, platforms map[string]any) (string, any, string, *FieldError) {
	if path, ok := compatEnv[name]; ok {
		val, err := parseEnvValue(value, reflect.TypeFor[int]())
		if err != nil {
			return "", nil, "", &FieldError{Path: name, Msg: err.Error()}
		}
		return path, val, "", nil
	}
	rest := strings.TrimPrefix(name, EnvPrefix)
	if !strings.Contains(rest, "__") {
		return "", nil, "", nil
	}
	segs := strings.Split(rest, "__")
	t := reflect.TypeFor[Config]()
	var path []string
	for i, seg := range segs {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case t == channelsType:
			lower := strings.ToLower(seg)
			if shared := map[string]string{"sendprogress": "sendProgress", "sendtoolhints": "sendToolHints", "sendmaxretries": "sendMaxRetries", "outboxmaxageh": "outboxMaxAgeH"}[normKey(seg)]; shared != "" {
				path = append(path, shared)
				if shared == "sendMaxRetries" || shared == "outboxMaxAgeH" {
					t = reflect.TypeFor[int]()
				} else {
					t = reflect.TypeFor[bool]()
				}
				continue
			}
			path = append(path, lower)
			if typed, ok := typedPlatform(platforms, lower); ok {
				t = typed
			} else {
				t = reflect.TypeFor[map[string]any]()
			}
		case t.Kind() == reflect.Struct:
			f, ok := structFields(t)[normKey(seg)]
			if !ok {
				return "", nil, fmt.Sprintf("%s: no config key %s (ignored)", name, strings.ToLower(strings.Join(segs[:i+1], "."))), nil
			}
			path = append(path, f.name)
			t = f.typ
		case t.Kind() == reflect.Map:
			path = append(path, strings.ToLower(seg))
			t = t.Elem()
		default:
			return "", nil, fmt.Sprintf("%s: %s has no sub-keys (ignored)", name, strings.Join(path, ".")), nil
		}
	}
	val, err := parseEnvValue(value, t)
	if err != nil {
		return "", nil, "", &FieldError{Path: name, Msg: err.Error()}
	}
	return strings.Join(path, envDelim), val, "", nil
}

// parseEnvValue converts an environment string to the JSON value of type t.
// Lists are JSON arrays or comma-separated; objects are JSON.
func parseEnvValue(s string, t reflect.Type) (any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return s, nil
	case reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("want boolean, got %q", s)
		}
		return b, nil
	case reflect.Int, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("want integer, got %q", s)
		}
		return float64(n), nil
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, fmt.Errorf("want number, got %q", s)
		}
		return f, nil
	case reflect.Slice:
		if strings.HasPrefix(strings.TrimSpace(s), "[") {
			var a []any
			if err := json.Unmarshal([]byte(s), &a); err != nil {
				return nil, fmt.Errorf("want a JSON array: %v", err)
			}
			return a, nil
		}
		a := []any{}
		for _, part := range strings.Split(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				v, err := parseEnvValue(part, t.Elem())
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
		}
		return a, nil
	case reflect.Interface:
		var v any
		if json.Unmarshal([]byte(s), &v) == nil {
			return v, nil
		}
		return s, nil
	default:
		var v map[string]any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return nil, fmt.Errorf("want a JSON object: %v", err)
		}
		return v, nil
	}
}

// valueAt returns the value at a dotted path of a decoded tree.
func valueAt(tree map[string]any, path string) any {
	var cur any = tree
	for _, s := range splitPath(path) {
		switch node := cur.(type) {
		case map[string]any:
			cur = node[s.key]
		case []any:
			if s.index < 0 || s.index >= len(node) {
				return nil
			}
			cur = node[s.index]
		default:
			return nil
		}
	}
	return cur
}
