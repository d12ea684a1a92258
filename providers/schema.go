package providers

import (
	"strings"
)

// SchemaDialect names a vendor's flavour of JSON Schema for tool parameters.
type SchemaDialect string

// Schema dialects.
const (
	// DialectOpenAI: OpenAI and most OpenAI-compatible servers.
	DialectOpenAI SchemaDialect = "openai"
	// DialectAnthropic: the Messages API input_schema.
	DialectAnthropic SchemaDialect = "anthropic"
	// DialectGemini: Google's OpenAPI-3 subset (also behind its OpenAI endpoint).
	DialectGemini SchemaDialect = "gemini"
)

// maxRefDepth bounds $ref inlining so a recursive schema terminates.
const maxRefDepth = 8

// NormalizeSchema returns a copy of a tool's parameter schema that the
// vendor accepts; the caller's map is never modified.
//
// For every dialect it inlines local $ref pointers ("#/$defs/X",
// "#/definitions/X", any "#/..." path) and drops the definitions, makes the
// root an object with "properties", gives every object schema "type" and
// "properties" and every array "items", and collapses a root anyOf/oneOf/
// allOf of objects into one object (vendors want a plain object at the top).
//
// DialectGemini further drops what Gemini rejects: additionalProperties,
// $schema/$id/$comment, examples, string formats other than enum and
// date-time; it turns anyOf/oneOf with a null branch and type arrays with
// "null" into a single type with nullable: true, const into a one-value enum,
// and merges allOf of objects.
func NormalizeSchema(schema map[string]any, dialect SchemaDialect) map[string]any {
	if schema == nil {
		return map[string]any{"type": "object", "properties": map[string]any{}}
	}
	root := deepCopy(schema).(map[string]any)
	n := normalizer{root: root, dialect: dialect}
	out, _ := n.walk(root, 0).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	out = collapseRootUnion(out)
	delete(out, "$defs")
	delete(out, "definitions")
	if _, ok := out["type"]; !ok {
		out["type"] = "object"
	}
	if out["type"] == "object" {
		if _, ok := out["properties"].(map[string]any); !ok {
			out["properties"] = map[string]any{}
		}
	}
	return out
}

// NormalizeTools applies NormalizeSchema to every tool's parameters,
// returning new definitions.
func NormalizeTools(tools []ToolDefinition, dialect SchemaDialect) []ToolDefinition {
	out := make([]ToolDefinition, len(tools))
	for i, t := range tools {
		t.Parameters = NormalizeSchema(t.Parameters, dialect)
		out[i] = t
	}
	return out
}

type normalizer struct {
	root    map[string]any
	dialect SchemaDialect
}

func (n normalizer) walk(v any, depth int) any {
	switch t := v.(type) {
	case map[string]any:
		return n.walkSchema(t, depth)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = n.walk(e, depth)
		}
		return out
	default:
		return v
	}
}

func (n normalizer) walkSchema(s map[string]any, depth int) any {
	if ref, ok := s["$ref"].(string); ok {
		target := n.resolveRef(ref)
		if target == nil || depth >= maxRefDepth {
			// Unresolvable or too deep: an open object keeps the call usable.
			return withSiblings(map[string]any{"type": "object", "properties": map[string]any{}}, s, "$ref")
		}
		return n.walkSchema(withSiblings(deepCopy(target).(map[string]any), s, "$ref"), depth+1)
	}

	out := make(map[string]any, len(s))
	for k, v := range s {
		switch k {
		case "enum", "const", "default", "examples", "required":
			// Literal values, not schemas.
			out[k] = v
			continue
		case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
			if props, ok := v.(map[string]any); ok {
				m := make(map[string]any, len(props))
				for name, p := range props {
					m[name] = n.walk(p, depth)
				}
				out[k] = m
				continue
			}
		}
		out[k] = n.walk(v, depth)
	}
	delete(out, "$defs")
	delete(out, "definitions")

	if n.dialect == DialectGemini {
		gemini(out)
	}

	typ, _ := out["type"].(string)
	if typ == "" {
		if _, ok := out["properties"]; ok {
			out["type"] = "object"
			typ = "object"
		}
	}
	switch typ {
	case "object":
		if _, ok := out["properties"].(map[string]any); !ok {
			out["properties"] = map[string]any{}
		}
	case "array":
		if _, ok := out["items"]; !ok {
			if n.dialect == DialectGemini {
				out["items"] = map[string]any{"type": "string"}
			} else {
				out["items"] = map[string]any{}
			}
		}
	}
	return out
}

// gemini rewrites one (already walked) schema node in place.
func gemini(s map[string]any) {
	for _, k := range []string{"additionalProperties", "$schema", "$id", "$comment", "examples", "unevaluatedProperties", "patternProperties", "dependentSchemas"} {
		delete(s, k)
	}
	if f, ok := s["format"].(string); ok && f != "enum" && f != "date-time" {
		delete(s, "format")
	}
	if c, ok := s["const"]; ok {
		s["enum"] = []any{c}
		delete(s, "const")
	}
	if types, ok := s["type"].([]any); ok {
		var kept []any
		nullable := false
		for _, t := range types {
			if t == "null" {
				nullable = true
			} else {
				kept = append(kept, t)
			}
		}
		switch len(kept) {
		case 0:
			s["type"] = "string"
		case 1:
			s["type"] = kept[0]
		default:
			delete(s, "type")
			branches := make([]any, len(kept))
			for i, t := range kept {
				branches[i] = map[string]any{"type": t}
			}
			s["anyOf"] = branches
		}
		if nullable {
			s["nullable"] = true
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		branches, ok := s[key].([]any)
		if !ok {
			continue
		}
		var kept []any
		nullable := false
		for _, b := range branches {
			if bm, ok := b.(map[string]any); ok && bm["type"] == "null" {
				nullable = true
				continue
			}
			kept = append(kept, b)
		}
		if !nullable {
			continue
		}
		delete(s, key)
		s["nullable"] = true
		if len(kept) == 1 {
			if only, ok := kept[0].(map[string]any); ok {
				for k, v := range only {
					if _, exists := s[k]; !exists {
						s[k] = v
					}
				}
				continue
			}
		}
		if len(kept) > 0 {
			s[key] = kept
		}
	}
	if all, ok := s["allOf"].([]any); ok {
		if merged, ok := mergeObjects(all); ok {
			delete(s, "allOf")
			for k, v := range merged {
				if _, exists := s[k]; !exists || k == "properties" || k == "required" {
					s[k] = v
				}
			}
		}
	}
}

// resolveRef follows a local JSON pointer ("#/$defs/Name").
func (n normalizer) resolveRef(ref string) map[string]any {
	if !strings.HasPrefix(ref, "#") {
		return nil
	}
	path := strings.TrimPrefix(strings.TrimPrefix(ref, "#"), "/")
	if path == "" {
		return nil // a self-reference to the root cannot be inlined
	}
	var cur any = n.root
	for _, tok := range strings.Split(path, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		if cur, ok = m[tok]; !ok {
			return nil
		}
	}
	m, _ := cur.(map[string]any)
	return m
}

// withSiblings copies the keywords next to a $ref (description, default...)
// onto the resolved schema, the sibling winning, as JSON Schema 2019+ does.
func withSiblings(target, refNode map[string]any, skip string) map[string]any {
	for k, v := range refNode {
		if k != skip {
			target[k] = v
		}
	}
	return target
}

// collapseRootUnion turns a root {"anyOf": [obj, obj]} into one object with
// the union of the properties, required only where every branch requires.
func collapseRootUnion(s map[string]any) map[string]any {
	if _, hasProps := s["properties"]; hasProps {
		return s
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		branches, ok := s[key].([]any)
		if !ok {
			continue
		}
		merged, ok := mergeObjects(branches)
		if !ok {
			continue
		}
		if key != "allOf" {
			if req := commonRequired(branches); len(req) > 0 {
				merged["required"] = req
			} else {
				delete(merged, "required")
			}
		}
		delete(s, key)
		for k, v := range merged {
			s[k] = v
		}
		return s
	}
	return s
}

// mergeObjects merges object schemas: properties unioned, required unioned.
func mergeObjects(branches []any) (map[string]any, bool) {
	props := map[string]any{}
	var required []any
	seen := map[string]bool{}
	for _, b := range branches {
		bm, ok := b.(map[string]any)
		if !ok {
			return nil, false
		}
		if t, ok := bm["type"]; ok && t != "object" {
			return nil, false
		}
		p, _ := bm["properties"].(map[string]any)
		if p == nil && bm["type"] != "object" {
			return nil, false
		}
		for k, v := range p {
			props[k] = v
		}
		req, _ := bm["required"].([]any)
		for _, r := range req {
			if name, ok := r.(string); ok && !seen[name] {
				seen[name] = true
				required = append(required, name)
			}
		}
	}
	out := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		out["required"] = required
	}
	return out, true
}

func commonRequired(branches []any) []any {
	count := map[string]int{}
	var order []string
	for _, b := range branches {
		bm, _ := b.(map[string]any)
		req, _ := bm["required"].([]any)
		for _, r := range req {
			name, ok := r.(string)
			if !ok {
				continue
			}
			if count[name] == 0 {
				order = append(order, name)
			}
			count[name]++
		}
	}
	var out []any
	for _, name := range order {
		if count[name] == len(branches) {
			out = append(out, name)
		}
	}
	return out
}

// deepCopy copies maps and slices of a decoded JSON value. Slices built in
// Go ([]string, []map[string]any) are rebuilt as []any so later passes see
// one shape.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, e := range t {
			s[i] = deepCopy(e)
		}
		return s
	case []string:
		s := make([]any, len(t))
		for i, e := range t {
			s[i] = e
		}
		return s
	case []map[string]any:
		s := make([]any, len(t))
		for i, e := range t {
			s[i] = deepCopy(e)
		}
		return s
	default:
		return v
	}
}
