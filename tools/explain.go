package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// maxExplain bounds the work of one explanation (schemas that refer to
// themselves through several alternatives would otherwise multiply it).
const maxExplain = 10000

// explainer names the problems of an instance the library found invalid.
type explainer struct {
	root     *jsonschema.Schema
	instance any
	budget   int
}

// problem is a ValidationError and, for a type mismatch, its parts, so a
// failed anyOf of types can say "want string or integer".
type problem struct {
	ValidationError
	wantTypes []string
	got       string
}

// explain lists the problems of v (at loc) against s. Structure
// (properties, required, additionalProperties, items, $ref, allOf, anyOf,
// oneOf) is walked here; every other keyword is put to the library.
func (e *explainer) explain(s *jsonschema.Schema, v any, loc []string, depth int) []problem {
	e.budget--
	if s == nil || depth > maxDepth || e.budget < 0 {
		return nil
	}
	var out []problem
	if s.Ref != "" {
		if target := e.ref(s.Ref); target != nil {
			out = append(out, e.explain(target, v, loc, depth+1)...)
		}
	}
	if p, ok := e.typeMismatch(s, v, loc); ok {
		return append(out, p)
	}
	if s.UnevaluatedProperties != nil || s.UnevaluatedItems != nil {
		// These depend on what the rest evaluated: judge the location whole.
		return append(out, e.whole(s, v, loc)...)
	}
	switch val := v.(type) {
	case map[string]any:
		for _, name := range s.Required {
			if _, ok := val[name]; !ok {
				out = append(out, e.at(loc, name, "missing required property"))
			}
		}
		for _, name := range sortedKeys(val) {
			if sub, ok := s.Properties[name]; ok {
				out = append(out, e.explain(sub, val[name], with(loc, name), depth+1)...)
				continue
			}
			if s.AdditionalProperties == nil || len(s.PatternProperties) > 0 {
				continue
			}
			if isFalse(s.AdditionalProperties) {
				out = append(out, e.at(loc, name, "unknown property (not allowed here)"))
			} else {
				out = append(out, e.explain(s.AdditionalProperties, val[name], with(loc, name), depth+1)...)
			}
		}
	case []any:
		for i, item := range val {
			switch {
			case i < len(s.PrefixItems):
				out = append(out, e.explain(s.PrefixItems[i], item, with(loc, strconv.Itoa(i)), depth+1)...)
			case s.Items != nil && (s.ItemsArray == nil):
				out = append(out, e.explain(s.Items, item, with(loc, strconv.Itoa(i)), depth+1)...)
			}
		}
	}
	for _, sub := range s.AllOf {
		out = append(out, e.explain(sub, v, loc, depth+1)...)
	}
	if len(s.AnyOf) > 0 {
		if branches, ok := e.alternatives(s.AnyOf, v, loc, depth); !ok {
			out = append(out, e.noneMatched(branches, loc))
		}
	}
	if len(s.OneOf) > 0 {
		branches, _ := e.alternatives(s.OneOf, v, loc, depth)
		var matched []int
		for i, b := range branches {
			if len(b) == 0 {
				matched = append(matched, i)
			}
		}
		switch {
		case len(matched) == 0:
			out = append(out, e.noneMatched(branches, loc))
		case len(matched) > 1:
			out = append(out, problem{ValidationError: ValidationError{Path: formatPath(e.instance, loc),
				Message: fmt.Sprintf("matches more than one of the allowed forms (%d and %d); want exactly one", matched[0], matched[1])}})
		}
	}
	return append(out, e.keywords(s, v, loc)...)
}

// alternatives explains v against each branch; ok reports that one matched.
func (e *explainer) alternatives(branches []*jsonschema.Schema, v any, loc []string, depth int) ([][]problem, bool) {
	out := make([][]problem, len(branches))
	ok := false
	for i, b := range branches {
		out[i] = e.explain(b, v, loc, depth+1)
		if len(out[i]) == 0 {
			ok = true
		}
	}
	return out, ok
}

// noneMatched explains a failed anyOf/oneOf: "want string or null, got
// integer" when every branch failed on type alone.
func (e *explainer) noneMatched(branches [][]problem, loc []string) problem {
	var wants []string
	got := ""
	typesOnly := true
	for _, b := range branches {
		if len(b) != 1 || b[0].wantTypes == nil {
			typesOnly = false
			break
		}
		wants = append(wants, b[0].wantTypes...)
		got = b[0].got
	}
	path := formatPath(e.instance, loc)
	if typesOnly {
		return problem{ValidationError: ValidationError{Path: path, Message: "want " + strings.Join(wants, " or ") + ", got " + got}}
	}
	var parts []string
	for _, b := range branches {
		for _, p := range b {
			parts = append(parts, p.String())
		}
	}
	return problem{ValidationError: ValidationError{Path: path, Message: "does not match any of the allowed forms (" + strings.Join(parts, "; ") + ")"}}
}

// typeMismatch checks the type keyword; the other keywords of a location
// whose type is wrong are not worth reporting.
func (e *explainer) typeMismatch(s *jsonschema.Schema, v any, loc []string) (problem, bool) {
	want := s.Types
	if s.Type != "" {
		want = []string{s.Type}
	}
	if len(want) == 0 {
		return problem{}, false
	}
	got := jsonKind(v)
	for _, w := range want {
		if w == got || w == "number" && got == "integer" || w == "integer" && got == "integer" {
			return problem{}, false
		}
	}
	if got == "integer" {
		got = "number"
	}
	sorted := slices.Clone(want)
	if len(sorted) > 1 {
		sort.Strings(sorted)
	}
	return problem{
		ValidationError: ValidationError{Path: formatPath(e.instance, loc), Message: "want " + strings.Join(sorted, " or ") + ", got " + got},
		wantTypes:       want, got: got,
	}, true
}

// keywords puts the location's own keywords (everything but structure and
// type) to the library, one failure at a time, and words each.
func (e *explainer) keywords(s *jsonschema.Schema, v any, loc []string) []problem {
	shallow := *s
	shallow.Ref, shallow.Type, shallow.Types = "", "", nil
	shallow.Required, shallow.Properties = nil, nil
	if len(s.PatternProperties) == 0 {
		shallow.AdditionalProperties = nil
	} else if s.AdditionalProperties != nil && len(s.Properties) > 0 {
		// additionalProperties is judged here, beside patternProperties:
		// the declared properties must still count as declared (their
		// values are walked by explain).
		shallow.Properties = make(map[string]*jsonschema.Schema, len(s.Properties))
		for name := range s.Properties {
			shallow.Properties[name] = &jsonschema.Schema{}
		}
	}
	shallow.PrefixItems, shallow.Items = nil, nil
	if s.ItemsArray == nil {
		shallow.ItemsArray = nil
	}
	shallow.AllOf, shallow.AnyOf, shallow.OneOf = nil, nil, nil
	var out []problem
	for range 32 {
		rs, err := shallow.Resolve(&jsonschema.ResolveOptions{BaseURI: schemaURL, Loader: noLoader})
		if err != nil {
			// A keyword refers elsewhere in the schema: judge the
			// location whole.
			return append(out, e.whole(s, v, loc)...)
		}
		err = rs.Validate(v)
		if err == nil {
			return out
		}
		msg := innermost(err)
		if extra, ok := strings.CutPrefix(msg, "unexpected additional properties "); ok {
			shallow.AdditionalProperties = nil
			out = append(out, problem{ValidationError: ValidationError{Path: formatPath(e.instance, loc), Message: "unknown properties (not allowed here): " + extra}})
			continue
		}
		kw, _, _ := strings.Cut(msg, ":")
		if !clearKeyword(&shallow, kw) {
			return append(out, problem{ValidationError: ValidationError{Path: formatPath(e.instance, loc), Message: msg}})
		}
		out = append(out, problem{ValidationError: ValidationError{Path: formatPath(e.instance, loc), Message: describe(kw, s, v, msg)}})
	}
	return out
}

// whole reports the library's verdict on a location as one problem.
func (e *explainer) whole(s *jsonschema.Schema, v any, loc []string) []problem {
	rs, err := s.Resolve(&jsonschema.ResolveOptions{BaseURI: schemaURL, Loader: noLoader})
	if err != nil {
		rs = nil
	}
	if rs != nil {
		if err = rs.Validate(v); err == nil {
			return nil
		}
	}
	return []problem{{ValidationError: ValidationError{Path: formatPath(e.instance, loc), Message: innermost(err)}}}
}

// ref finds a $ref inside the root schema ("#", "#/$defs/x",
// "#/properties/a/items"); nil if it points anywhere else.
func (e *explainer) ref(ref string) *jsonschema.Schema {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok || (ptr != "" && !strings.HasPrefix(ptr, "/")) {
		return nil
	}
	cur := e.root
	toks := strings.Split(ptr, "/")[1:]
	unescape := strings.NewReplacer("~1", "/", "~0", "~")
	for i := 0; i < len(toks) && cur != nil; i++ {
		field := toks[i]
		var next string
		switch field {
		case "$defs", "definitions", "properties", "patternProperties", "dependentSchemas", "allOf", "anyOf", "oneOf", "prefixItems":
			if i+1 >= len(toks) {
				return nil
			}
			i++
			next = unescape.Replace(toks[i])
		}
		switch field {
		case "$defs":
			cur = cur.Defs[next]
		case "definitions":
			cur = cur.Definitions[next]
		case "properties":
			cur = cur.Properties[next]
		case "patternProperties":
			cur = cur.PatternProperties[next]
		case "dependentSchemas":
			cur = cur.DependentSchemas[next]
		case "allOf", "anyOf", "oneOf", "prefixItems":
			list := map[string][]*jsonschema.Schema{"allOf": cur.AllOf, "anyOf": cur.AnyOf, "oneOf": cur.OneOf, "prefixItems": cur.PrefixItems}[field]
			n, err := strconv.Atoi(next)
			if err != nil || n < 0 || n >= len(list) {
				return nil
			}
			cur = list[n]
		case "items":
			cur = cur.Items
		case "additionalProperties":
			cur = cur.AdditionalProperties
		case "not":
			cur = cur.Not
		default:
			return nil
		}
	}
	return cur
}

// clearKeyword removes the keyword the library failed on from s, so the
// next round finds the next one; false when it is not one we know.
func clearKeyword(s *jsonschema.Schema, kw string) bool {
	switch kw {
	case "enum":
		s.Enum = nil
	case "const":
		s.Const = nil
	case "multipleOf":
		s.MultipleOf = nil
	case "minimum":
		s.Minimum = nil
	case "maximum":
		s.Maximum = nil
	case "exclusiveMinimum":
		s.ExclusiveMinimum = nil
	case "exclusiveMaximum":
		s.ExclusiveMaximum = nil
	case "minLength":
		s.MinLength = nil
	case "maxLength":
		s.MaxLength = nil
	case "pattern":
		s.Pattern = ""
	case "minItems":
		s.MinItems = nil
	case "maxItems":
		s.MaxItems = nil
	case "uniqueItems":
		s.UniqueItems = false
	case "minProperties":
		s.MinProperties = nil
	case "maxProperties":
		s.MaxProperties = nil
	case "not":
		s.Not = nil
	case "contains", "minContains", "maxContains":
		s.Contains, s.MinContains, s.MaxContains = nil, nil, nil
	default:
		return false
	}
	return true
}

// describe words a failed keyword for the model from the schema and the
// value; msg is the library's wording, kept for what is not worded here.
func describe(kw string, s *jsonschema.Schema, v any, msg string) string {
	switch kw {
	case "enum":
		want := make([]string, 0, len(s.Enum))
		for _, w := range s.Enum {
			want = append(want, display(w))
		}
		return "want one of " + strings.Join(want, ", ") + ", got " + display(v)
	case "const":
		return "want " + display(*s.Const) + ", got " + display(v)
	case "minimum":
		return "want >= " + num(*s.Minimum) + ", got " + numOf(v)
	case "maximum":
		return "want <= " + num(*s.Maximum) + ", got " + numOf(v)
	case "exclusiveMinimum":
		return "want > " + num(*s.ExclusiveMinimum) + ", got " + numOf(v)
	case "exclusiveMaximum":
		return "want < " + num(*s.ExclusiveMaximum) + ", got " + numOf(v)
	case "multipleOf":
		return "want a multiple of " + num(*s.MultipleOf) + ", got " + numOf(v)
	case "minLength":
		str, _ := v.(string)
		return fmt.Sprintf("want at least %d characters, got %d", *s.MinLength, utf8.RuneCountInString(str))
	case "maxLength":
		str, _ := v.(string)
		return fmt.Sprintf("want at most %d characters, got %d", *s.MaxLength, utf8.RuneCountInString(str))
	case "pattern":
		str, _ := v.(string)
		return "want a string matching " + strconv.Quote(s.Pattern) + ", got " + strconv.Quote(str)
	case "minItems":
		return fmt.Sprintf("want at least %d items, got %d", *s.MinItems, lenOf(v))
	case "maxItems":
		return fmt.Sprintf("want at most %d items, got %d", *s.MaxItems, lenOf(v))
	case "minProperties":
		return fmt.Sprintf("want at least %d properties, got %d", *s.MinProperties, lenOf(v))
	case "maxProperties":
		return fmt.Sprintf("want at most %d properties, got %d", *s.MaxProperties, lenOf(v))
	case "uniqueItems":
		var i, j int
		if _, err := fmt.Sscanf(strings.TrimPrefix(msg, "uniqueItems: "), "array items %d and %d are equal", &i, &j); err == nil {
			return fmt.Sprintf("want unique items, but [%d] and [%d] are equal", min(i, j), max(i, j))
		}
		return "want unique items"
	case "not":
		if isFalse(s) {
			return "no value is allowed here"
		}
		return "matches a form that is not allowed here"
	}
	return msg
}

// innermost is the library's message without its "validating <schema>:"
// prefixes.
func innermost(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

func (e *explainer) at(loc []string, name, msg string) problem {
	return problem{ValidationError: ValidationError{Path: formatPath(e.instance, with(loc, name)), Message: msg}}
}

func with(loc []string, tok string) []string { return append(loc[:len(loc):len(loc)], tok) }

// isFalse reports the schema false, which the library reads as {"not": {}}.
func isFalse(s *jsonschema.Schema) bool {
	if s == nil || s.Not == nil || !reflect.ValueOf(*s.Not).IsZero() {
		return false
	}
	c := *s
	c.Not = nil
	return reflect.ValueOf(c).IsZero()
}

// jsonKind names v's JSON type, "integer" for a whole number.
func jsonKind(v any) string {
	switch n := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case float64:
		if n == math.Trunc(n) && !math.IsInf(n, 0) {
			return "integer"
		}
		return "number"
	case float32:
		return jsonKind(float64(n))
	case json.Number:
		if _, err := n.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "integer"
	}
	return "unknown"
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func numOf(v any) string {
	switch n := v.(type) {
	case float64:
		return num(n)
	case json.Number:
		return n.String()
	}
	return display(v)
}

func lenOf(v any) int {
	switch c := v.(type) {
	case []any:
		return len(c)
	case map[string]any:
		return len(c)
	}
	return 0
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
