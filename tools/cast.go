package tools

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// maxDepth bounds recursion over arguments and schemas (a Go-built schema
// may even be cyclic).
const maxDepth = 64

// Cast tolerantly converts what a model sent into the types the schema asks
// for, before strict validation. It never mutates args and always returns a
// new, non-nil map; values it cannot convert are left for Validate to report.
//
// Conversions, applied recursively through properties, additionalProperties,
// items and prefixItems:
//
//   - integer: "10" -> 10, 10.0 -> 10, "1e3" -> 1000 (integers become int)
//   - number: "3.5" -> 3.5 (non-finite strings such as "NaN" stay strings)
//   - boolean: "true"/"false", "1"/"0", "yes"/"no", "on"/"off" (any case), and
//     the numbers 1 and 0
//   - string: numbers and booleans are formatted ("10", "true")
//   - array or object: a string holding JSON of that shape is decoded
//   - array: any other single non-null value becomes a one-element array
//     (models often send "a.txt" where ["a.txt"] is wanted)
//   - enum of strings: a case-insensitive unique match is replaced by the
//     enum's spelling ("ADD" -> "add")
//
// A "type" list is tried in order, but a value that already matches one of
// the listed types is kept. anyOf/oneOf are handled lightly: the first
// branch whose type the value matches (or can be cast to) wins.
func Cast(schema map[string]any, args map[string]any) map[string]any {
	if schema == nil {
		schema = map[string]any{"type": "object"}
	}
	out, ok := castValue(schema, args, 0).(map[string]any)
	if !ok || out == nil {
		out = map[string]any{}
		if args != nil {
			out, _ = copyValue(args, 0).(map[string]any)
		}
	}
	return out
}

func castValue(schema any, v any, depth int) any {
	s, ok := schema.(map[string]any)
	if !ok || depth > maxDepth {
		return copyValue(v, depth)
	}
	types := schemaTypes(s)
	if len(types) == 0 {
		if branches := alternatives(s); len(branches) > 0 {
			return castAlternatives(branches, v, depth)
		}
		return copyValue(v, depth)
	}
	for _, t := range types {
		if matchesType(t, v) {
			return descend(s, t, v, depth)
		}
	}
	for _, t := range types {
		if c, ok := convert(t, v); ok {
			return descend(s, t, c, depth)
		}
	}
	return copyValue(v, depth)
}

// schemaTypes returns the types a schema names, inferring object and array
// from properties and items when "type" is absent.
func schemaTypes(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if name, ok := e.(string); ok {
				out = append(out, name)
			}
		}
		return out
	case []string:
		return t
	}
	if _, ok := s["properties"].(map[string]any); ok {
		return []string{"object"}
	}
	if _, ok := s["items"]; ok {
		return []string{"array"}
	}
	return nil
}

func alternatives(s map[string]any) []map[string]any {
	var out []map[string]any
	for _, key := range []string{"anyOf", "oneOf"} {
		list, _ := s[key].([]any)
		for _, b := range list {
			if m, ok := b.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

func castAlternatives(branches []map[string]any, v any, depth int) any {
	for _, b := range branches {
		for _, t := range schemaTypes(b) {
			if matchesType(t, v) {
				return castValue(b, v, depth)
			}
		}
	}
	for _, b := range branches {
		for _, t := range schemaTypes(b) {
			if _, ok := convert(t, v); ok {
				return castValue(b, v, depth)
			}
		}
	}
	return copyValue(v, depth)
}

func matchesType(t string, v any) bool {
	switch t {
	case "string":
		_, ok := v.(string)
		return ok
	case "integer":
		f, ok := numberOf(v)
		return ok && isIntegral(f)
	case "number":
		_, ok := numberOf(v)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "array":
		switch v.(type) {
		case []any, []string:
			return true
		}
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "null":
		return v == nil
	}
	return false
}

// convert turns v into type t when a tolerant reading allows it.
func convert(t string, v any) (any, bool) {
	switch t {
	case "integer":
		s, ok := v.(string)
		if !ok {
			return nil, false
		}
		s = strings.TrimSpace(s)
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return toInt(float64(n), n), true
		}
		if f, ok := parseFinite(s); ok && isIntegral(f) {
			return toInt(f, int64(f)), true
		}
	case "number":
		s, ok := v.(string)
		if !ok {
			return nil, false
		}
		s = strings.TrimSpace(s)
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n == int64(int(n)) {
			return int(n), true
		}
		if f, ok := parseFinite(s); ok {
			return f, true
		}
	case "boolean":
		switch v := v.(type) {
		case string:
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "true", "1", "yes", "on":
				return true, true
			case "false", "0", "no", "off":
				return false, true
			}
		default:
			if f, ok := numberOf(v); ok && (f == 0 || f == 1) {
				return f == 1, true
			}
		}
	case "string":
		switch v := v.(type) {
		case bool:
			return strconv.FormatBool(v), true
		case json.Number:
			return v.String(), true
		default:
			if f, ok := numberOf(v); ok {
				if isIntegral(f) && math.Abs(f) < 1<<53 {
					return strconv.FormatInt(int64(f), 10), true
				}
				return strconv.FormatFloat(f, 'f', -1, 64), true
			}
		}
	case "array":
		if s, ok := v.(string); ok {
			if trimmed := strings.TrimSpace(s); strings.HasPrefix(trimmed, "[") {
				var decoded []any
				if json.Unmarshal([]byte(trimmed), &decoded) == nil {
					return decoded, true
				}
			}
		}
		if v != nil {
			return []any{v}, true
		}
	case "object":
		if s, ok := v.(string); ok {
			if trimmed := strings.TrimSpace(s); strings.HasPrefix(trimmed, "{") {
				var decoded map[string]any
				if json.Unmarshal([]byte(trimmed), &decoded) == nil && decoded != nil {
					return decoded, true
				}
			}
		}
	}
	return nil, false
}

// descend normalises a value already of type t and casts its children.
func descend(s map[string]any, t string, v any, depth int) any {
	switch t {
	case "integer":
		if f, ok := numberOf(v); ok {
			if n, isInt := v.(int); isInt {
				return n
			}
			return toInt(f, int64(f))
		}
	case "number":
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil && i == int64(int(i)) {
				return int(i)
			}
			f, _ := n.Float64()
			return f
		}
	case "string":
		if str, ok := v.(string); ok {
			return matchEnum(s, str)
		}
	case "array":
		return castArray(s, v, depth)
	case "object":
		if m, ok := v.(map[string]any); ok {
			return castObject(s, m, depth)
		}
	}
	return copyValue(v, depth)
}

func castArray(s map[string]any, v any, depth int) any {
	var list []any
	switch v := v.(type) {
	case []any:
		list = v
	case []string:
		list = make([]any, len(v))
		for i, e := range v {
			list[i] = e
		}
	default:
		return copyValue(v, depth)
	}
	prefix, _ := s["prefixItems"].([]any)
	if legacy, ok := s["items"].([]any); ok && prefix == nil {
		prefix = legacy // draft-4 tuple form
	}
	items := s["items"]
	out := make([]any, len(list))
	for i, e := range list {
		switch {
		case i < len(prefix):
			out[i] = castValue(prefix[i], e, depth+1)
		default:
			out[i] = castValue(items, e, depth+1)
		}
	}
	return out
}

func castObject(s map[string]any, m map[string]any, depth int) map[string]any {
	props, _ := s["properties"].(map[string]any)
	additional := s["additionalProperties"]
	out := make(map[string]any, len(m))
	for k, e := range m {
		if ps, ok := props[k]; ok {
			out[k] = castValue(ps, e, depth+1)
			continue
		}
		out[k] = castValue(additional, e, depth+1)
	}
	return out
}

// matchEnum fixes the case of a string that matches exactly one enum value
// case-insensitively.
func matchEnum(s map[string]any, str string) string {
	enum, _ := s["enum"].([]any)
	if len(enum) == 0 {
		return str
	}
	found := ""
	n := 0
	for _, e := range enum {
		es, ok := e.(string)
		if !ok {
			continue
		}
		if es == str {
			return str
		}
		if strings.EqualFold(es, strings.TrimSpace(str)) {
			found = es
			n++
		}
	}
	if n == 1 {
		return found
	}
	return str
}

// copyValue deep-copies maps and slices so Cast never shares (and so never
// lets a caller mutate) the input's containers.
func copyValue(v any, depth int) any {
	if depth > maxDepth {
		return v
	}
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = copyValue(e, depth+1)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyValue(e, depth+1)
		}
		return out
	case []string:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = e
		}
		return out
	case map[string]string:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = e
		}
		return out
	}
	return v
}

// numberOf reports v as a float64 if it is any Go or JSON number (of a
// built-in type: named number types are not numbers here).
func numberOf(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.Type().PkgPath() != "" {
		return 0, false
	}
	switch {
	case rv.CanInt():
		return float64(rv.Int()), true
	case rv.CanUint():
		return float64(rv.Uint()), true
	case rv.CanFloat():
		return rv.Float(), true
	}
	return 0, false
}

func isIntegral(f float64) bool {
	return !math.IsInf(f, 0) && !math.IsNaN(f) && f == math.Trunc(f)
}

// toInt returns exact as an int when f is within the range where float64
// holds integers exactly; larger values stay float64 (still valid integers
// for the validator).
func toInt(f float64, exact int64) any {
	if math.Abs(f) <= 1<<53 && exact == int64(int(exact)) {
		return int(exact)
	}
	return f
}

func parseFinite(s string) (float64, bool) {
	if s == "" || strings.ContainsAny(s, "xXpP_") {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}
