package configs

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
)

// FieldError is a problem with one value, located by its JSON path
// ("channels.telegram.allowFrom[1]").
type FieldError struct {
	Path string
	Msg  string
}

func (e FieldError) String() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// checker walks a decoded JSON tree against the Go type it will be decoded
// into. It reports type mismatches with their paths, warns about unknown keys,
// and rewrites snake_case or differently-cased keys to the canonical
// camelCase name (the Python nanobot accepts both spellings).
type checker struct {
	errs     []FieldError
	warnings []string
	// unknown are the paths of the keys and channels warned about as
	// unknown (not those of a platform left out of the build).
	unknown []string
	// platforms maps a channel platform name to its typed config (a struct
	// value); absent platforms are checked against ChannelCommon only.
	platforms map[string]any
}

var channelsType = reflect.TypeFor[ChannelsConfig]()

func (c *checker) errorf(path, format string, args ...any) {
	c.errs = append(c.errs, FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64, json.Number:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// check validates v (a decoded JSON value) against t. It returns the value to
// keep (normalised maps are rewritten in place).
func (c *checker) check(path string, v any, t reflect.Type) {
	if v == nil {
		return // null means "use the default"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case channelsType:
		c.checkChannels(path, v)
		return
	case agentsType:
		c.checkAgents(path, v)
		return
	case fallbackType:
		c.checkFallback(path, v)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := c.object(path, v)
		if !ok {
			return
		}
		c.checkStruct(path, m, t, true)
	case reflect.Map:
		m, ok := c.object(path, v)
		if !ok {
			return
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			c.check(join(path, k), m[k], t.Elem())
		}
	case reflect.Slice:
		a, ok := v.([]any)
		if !ok {
			c.errorf(path, "want array, got %s", jsonKind(v))
			return
		}
		for i, e := range a {
			c.check(fmt.Sprintf("%s[%d]", path, i), e, t.Elem())
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			c.errorf(path, "want string, got %s", jsonKind(v))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			c.errorf(path, "want boolean, got %s", jsonKind(v))
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		f, ok := v.(float64)
		if !ok || f != math.Trunc(f) {
			c.errorf(path, "want integer, got %s", jsonKind(v))
		}
	case reflect.Float64, reflect.Float32:
		if _, ok := v.(float64); !ok {
			c.errorf(path, "want number, got %s", jsonKind(v))
		}
	case reflect.Interface:
		// any value is fine
	}
}

// object is v as a JSON object; anything else is an error at path.
func (c *checker) object(path string, v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		c.errorf(path, "want object, got %s", jsonKind(v))
	}
	return m, ok
}

// checkStruct checks an object against a struct type. warnUnknown is false
// for platform configs whose full type is not known here.
func (c *checker) checkStruct(path string, m map[string]any, t reflect.Type, warnUnknown bool) {
	fields := structFields(t)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		f, ok := fields[k]
		if !ok {
			if canon, found := fields[normKey(k)]; found {
				if _, dup := m[canon.name]; !dup {
					m[canon.name] = m[k]
				}
				delete(m, k)
				f, ok, k = canon, true, canon.name
			}
		}
		if !ok {
			if warnUnknown {
				msg := fmt.Sprintf("%s: unknown key (ignored)", join(path, k))
				if s := suggest(k, fields); s != "" {
					msg += fmt.Sprintf("; did you mean %q?", s)
				}
				c.warnings = append(c.warnings, msg)
				c.unknown = append(c.unknown, join(path, k))
			}
			continue
		}
		c.check(join(path, k), m[k], f.typ)
	}
}

func (c *checker) checkChannels(path string, v any) {
	m, ok := c.object(path, v)
	if !ok {
		return
	}
	shared := map[string]reflect.Type{
		"sendProgress":   reflect.TypeFor[bool](),
		"sendToolHints":  reflect.TypeFor[bool](),
		"sendMaxRetries": reflect.TypeFor[int](),
		"outboxMaxAgeH":  reflect.TypeFor[int](),
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if t, ok := shared[k]; ok {
			c.check(join(path, k), m[k], t)
			continue
		}
		if canon := snakeToCamel(k); shared[canon] != nil {
			m[canon] = m[k]
			delete(m, k)
			c.check(join(path, canon), m[canon], shared[canon])
			continue
		}
		pm, ok := m[k].(map[string]any)
		if !ok {
			if m[k] != nil {
				c.errorf(join(path, k), "want object, got %s", jsonKind(m[k]))
			}
			continue
		}
		if nb, ok := c.platforms[k].(NotBuilt); ok {
			c.warnings = append(c.warnings, fmt.Sprintf("%s: %s", join(path, k), nb.Why))
		} else if typed, ok := typedPlatform(c.platforms, k); ok {
			c.checkStruct(join(path, k), pm, typed, true)
			continue
		} else if len(c.platforms) > 0 {
			c.warnings = append(c.warnings, fmt.Sprintf("%s: unknown channel (ignored)", join(path, k)))
			c.unknown = append(c.unknown, join(path, k))
		}
		c.checkStruct(join(path, k), pm, reflect.TypeFor[ChannelCommon](), false)
	}
}

type fieldInfo struct {
	name string
	typ  reflect.Type
}

// structFields maps each field's JSON name, and its normalised form, to the
// field. Embedded structs are flattened like encoding/json does.
func structFields(t reflect.Type) map[string]fieldInfo {
	out := map[string]fieldInfo{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			for k, v := range structFields(ft) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		fi := fieldInfo{name: name, typ: f.Type}
		out[name] = fi
		out[normKey(name)] = fi
	}
	return out
}

// normKey folds case and drops separators: "api_key", "APIKEY" and "apiKey"
// all become "apikey".
// keySeparators drops the separators normKey ignores. It is built once: a
// replacer built per call cost every start about 1 MB of garbage while the
// config was checked.
var keySeparators = strings.NewReplacer("_", "", "-", "")

func normKey(k string) string {
	return strings.ToLower(keySeparators.Replace(k))
}

func snakeToCamel(k string) string {
	parts := strings.Split(k, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// suggest returns the canonical field name closest to k, if close enough to
// be a typo.
func suggest(k string, fields map[string]fieldInfo) string {
	best, bestD := "", 3
	seen := map[string]bool{}
	for _, f := range fields {
		if seen[f.name] {
			continue
		}
		seen[f.name] = true
		if d := levenshtein(normKey(k), normKey(f.name)); d < bestD || (d == bestD && f.name < best && best != "") {
			best, bestD = f.name, d
		}
	}
	return best
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
