package tools

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// ValidationError is one problem with the arguments of a tool call.
type ValidationError struct {
	// Path locates the offending value: "user.age", "items[2].name"; empty
	// for the arguments object itself.
	Path string
	// Message says what is wrong, e.g. "want integer, got string".
	Message string
}

// String renders the problem as "path: message".
func (e ValidationError) String() string {
	path := e.Path
	if path == "" {
		path = "(arguments)"
	}
	return path + ": " + e.Message
}

// Schema is a compiled JSON Schema for tool arguments. It is safe for
// concurrent use.
//
// github.com/google/jsonschema-go decides whether arguments are valid; it
// stops at the first problem and words it for programmers, so when the
// arguments are invalid, Validate walks the schema beside them to name
// every problem with its path, in words a model can act on, asking the
// library about one location's keywords at a time.
type Schema struct {
	root     *jsonschema.Schema
	resolved *jsonschema.Resolved
}

// schemaURL is the base URI each schema is resolved against; nothing is
// ever loaded from it.
const schemaURL = "mem:///parameters.json"

// Drafts whose keywords the validator knows; a tool schema naming another
// draft is read as 2020-12, the keywords tools use being the same.
var knownDrafts = map[string]bool{
	"https://json-schema.org/draft/2020-12/schema": true,
	"http://json-schema.org/draft-07/schema":       true,
	"http://json-schema.org/draft-07/schema#":      true,
}

var typeNames = map[string]bool{"null": true, "boolean": true, "object": true, "array": true, "number": true, "string": true, "integer": true}

// CompileSchema compiles a tool's parameter schema (draft 2020-12 unless the
// schema says draft-07). A nil schema accepts any object. An invalid schema
// is an error, never a panic, and no $ref is ever loaded from disk or network.
func CompileSchema(schema map[string]any) (s *Schema, err error) {
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("compile schema: internal error: %v", p)
		}
	}()
	if schema == nil {
		schema = map[string]any{"type": "object"}
	}
	if d, ok := schema["$schema"].(string); ok && !knownDrafts[d] {
		schema = maps.Clone(schema)
		delete(schema, "$schema")
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("compile schema: not JSON: %w", err)
	}
	var root jsonschema.Schema
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	if err := checkTypeNames(&root, 0); err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	resolved, err := root.Resolve(&jsonschema.ResolveOptions{BaseURI: schemaURL, Loader: noLoader})
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	if err := checkRefLoops(&root); err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	return &Schema{root: &root, resolved: resolved}, nil
}

// noLoader refuses every external $ref: tool schemas are self-contained.
func noLoader(u *url.URL) (*jsonschema.Schema, error) {
	return nil, fmt.Errorf("external $ref %q is not allowed in tool schemas", u.String())
}

// checkTypeNames rejects a misspelt type ("integr"), which the library
// would accept and then fail every value against.
func checkTypeNames(s *jsonschema.Schema, depth int) error {
	if s == nil || depth > maxDepth {
		return nil
	}
	for _, t := range append([]string{s.Type}, s.Types...) {
		if t != "" && !typeNames[t] {
			return fmt.Errorf("unknown type %q", t)
		}
	}
	for _, sub := range subschemas(s) {
		if err := checkTypeNames(sub, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// checkRefLoops rejects a $ref that leads back to itself without moving
// into the value ({"$ref": "#"}): the library would recurse until the
// stack overflows, which no recover can catch.
func checkRefLoops(root *jsonschema.Schema) error {
	e := explainer{root: root}
	const (
		visiting = 1
		done     = 2
	)
	state := map[*jsonschema.Schema]int{}
	var visit func(s *jsonschema.Schema, depth int) error
	visit = func(s *jsonschema.Schema, depth int) error {
		if s == nil || state[s] == done || depth > 10*maxDepth {
			return nil
		}
		if state[s] == visiting {
			return fmt.Errorf("$ref loop that never moves into the value")
		}
		state[s] = visiting
		// Keywords that apply to the same value as s.
		same := []*jsonschema.Schema{s.Not, s.If, s.Then, s.Else}
		if s.Ref != "" {
			same = append(same, e.ref(s.Ref))
		}
		same = append(same, s.AllOf...)
		same = append(same, s.AnyOf...)
		same = append(same, s.OneOf...)
		for _, d := range s.DependentSchemas {
			same = append(same, d)
		}
		for _, sub := range same {
			if err := visit(sub, depth+1); err != nil {
				return err
			}
		}
		state[s] = done
		return nil
	}
	var walk func(s *jsonschema.Schema, depth int) error
	walk = func(s *jsonschema.Schema, depth int) error {
		if s == nil || depth > maxDepth {
			return nil
		}
		if err := visit(s, 0); err != nil {
			return err
		}
		for _, sub := range subschemas(s) {
			if err := walk(sub, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(root, 0)
}

// subschemas lists the direct subschemas of s.
func subschemas(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Items, s.AdditionalItems, s.Contains, s.UnevaluatedItems, s.AdditionalProperties,
		s.PropertyNames, s.UnevaluatedProperties, s.Not, s.If, s.Then, s.Else, s.ContentSchema}
	out = append(out, s.PrefixItems...)
	out = append(out, s.ItemsArray...)
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	for _, m := range []map[string]*jsonschema.Schema{s.Defs, s.Definitions, s.Properties, s.PatternProperties, s.DependentSchemas, s.DependencySchemas} {
		for _, sub := range m {
			out = append(out, sub)
		}
	}
	return out
}

// Validate checks args strictly against the schema and returns every problem
// found, sorted by path; nil means valid.
func (s *Schema) Validate(args map[string]any) (problems []ValidationError) {
	defer func() {
		if p := recover(); p != nil {
			problems = []ValidationError{{Message: fmt.Sprintf("validation failed: internal error: %v", p)}}
		}
	}()
	var instance any = args
	if args == nil {
		instance = map[string]any{}
	}
	instance = jsonTree(instance)
	err := s.resolved.Validate(instance)
	if err == nil {
		return nil
	}
	ex := explainer{root: s.root, instance: instance, budget: maxExplain}
	for _, p := range ex.explain(s.root, instance, nil, 0) {
		problems = append(problems, p.ValidationError)
	}
	if len(problems) == 0 {
		// The walk found nothing the library did: report its own words.
		problems = []ValidationError{{Message: innermost(err)}}
	}
	sort.SliceStable(problems, func(i, j int) bool {
		if problems[i].Path != problems[j].Path {
			return problems[i].Path < problems[j].Path
		}
		return problems[i].Message < problems[j].Message
	})
	return dedupe(problems)
}

// Validate compiles schema and checks args against it. Prefer CompileSchema
// once and Schema.Validate per call; the Registry does that. A schema that
// does not compile is reported as a single problem.
func Validate(schema, args map[string]any) []ValidationError {
	s, err := CompileSchema(schema)
	if err != nil {
		return []ValidationError{{Message: "invalid tool schema: " + err.Error()}}
	}
	return s.Validate(args)
}

func display(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	const limit = 80
	if len(b) > limit {
		return string(b[:limit]) + "…"
	}
	return string(b)
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// formatPath renders an instance location as "user.age" or "items[2].name",
// walking the instance to tell array indices from object keys.
func formatPath(root any, tokens []string) string {
	var sb strings.Builder
	cur := root
	for _, tok := range tokens {
		switch c := cur.(type) {
		case []any:
			sb.WriteString("[" + tok + "]")
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(c) {
				cur = c[i]
			} else {
				cur = nil
			}
			continue
		case map[string]any:
			cur = c[tok]
		default:
			cur = nil
		}
		switch {
		case !plainKey.MatchString(tok):
			sb.WriteString("[" + strconv.Quote(tok) + "]")
		case sb.Len() > 0:
			sb.WriteString("." + tok)
		default:
			sb.WriteString(tok)
		}
	}
	return sb.String()
}

func dedupe(ps []ValidationError) []ValidationError {
	out := ps[:0]
	for i, p := range ps {
		if i > 0 && p == ps[i-1] {
			continue
		}
		out = append(out, p)
	}
	return out
}

// jsonTree returns v in the shapes the validator understands (maps of any,
// slices of any, numbers, strings, bools, nil), converting other Go values
// through JSON. Values already in those shapes are returned as they are.
func jsonTree(v any) any {
	if isJSONTree(v, 0) {
		return v
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return v // the validator reports it as an invalid JSON value
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return v
	}
	return out
}

func isJSONTree(v any, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch v := v.(type) {
	case nil, bool, string, json.Number, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return true
	case []any:
		for _, e := range v {
			if !isJSONTree(e, depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range v {
			if !isJSONTree(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}
