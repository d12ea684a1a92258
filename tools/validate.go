package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
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
type Schema struct {
	compiled *jsonschema.Schema
}

// schemaURL names the single in-memory resource each schema is compiled
// from; nothing is ever loaded from it.
const schemaURL = "mem:///parameters.json"

// CompileSchema compiles a tool's parameter schema (draft 2020-12 unless the
// schema says otherwise). A nil schema accepts any object. An invalid schema
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
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("compile schema: not JSON: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	compiled, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	return &Schema{compiled: compiled}, nil
}

// noLoader refuses every external $ref: tool schemas are self-contained.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %q is not allowed in tool schemas", url)
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
	err := s.compiled.Validate(instance)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return []ValidationError{{Message: err.Error()}}
	}
	flatten(verr, instance, &problems)
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

var printer = message.NewPrinter(language.English)

// flatten turns the validator's error tree into one problem per leaf.
func flatten(e *jsonschema.ValidationError, root any, out *[]ValidationError) {
	loc := e.InstanceLocation
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		for _, c := range e.Causes {
			flatten(c, root, out)
		}
	case *kind.Required:
		for _, m := range k.Missing {
			*out = append(*out, ValidationError{Path: formatPath(root, append(loc[:len(loc):len(loc)], m)), Message: "missing required property"})
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			*out = append(*out, ValidationError{Path: formatPath(root, append(loc[:len(loc):len(loc)], p)), Message: "unknown property (not allowed here)"})
		}
	case *kind.AnyOf, *kind.OneOf:
		*out = append(*out, ValidationError{Path: formatPath(root, loc), Message: alternativesMessage(e, root)})
	default:
		*out = append(*out, ValidationError{Path: formatPath(root, loc), Message: leafMessage(e.ErrorKind)})
	}
}

// alternativesMessage explains a failed anyOf/oneOf: "want string or null,
// got integer" when every branch failed on type alone.
func alternativesMessage(e *jsonschema.ValidationError, root any) string {
	if k, ok := e.ErrorKind.(*kind.OneOf); ok && len(k.Subschemas) > 1 {
		return fmt.Sprintf("matches more than one of the allowed forms (%d and %d); want exactly one", k.Subschemas[0], k.Subschemas[1])
	}
	var wants []string
	got := ""
	typesOnly := len(e.Causes) > 0
	for _, c := range e.Causes {
		t, ok := c.ErrorKind.(*kind.Type)
		if !ok {
			typesOnly = false
			break
		}
		wants = append(wants, t.Want...)
		got = t.Got
	}
	if typesOnly {
		return "want " + strings.Join(wants, " or ") + ", got " + got
	}
	var nested []ValidationError
	for _, c := range e.Causes {
		flatten(c, root, &nested)
	}
	parts := make([]string, 0, len(nested))
	for _, n := range nested {
		parts = append(parts, n.String())
	}
	return "does not match any of the allowed forms (" + strings.Join(parts, "; ") + ")"
}

func leafMessage(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		return "want " + strings.Join(k.Want, " or ") + ", got " + k.Got
	case *kind.Enum:
		want := make([]string, 0, len(k.Want))
		for _, w := range k.Want {
			want = append(want, display(w))
		}
		return "want one of " + strings.Join(want, ", ") + ", got " + display(k.Got)
	case *kind.Const:
		return "want " + display(k.Want) + ", got " + display(k.Got)
	case *kind.Minimum:
		return "want >= " + ratString(k.Want) + ", got " + ratString(k.Got)
	case *kind.Maximum:
		return "want <= " + ratString(k.Want) + ", got " + ratString(k.Got)
	case *kind.ExclusiveMinimum:
		return "want > " + ratString(k.Want) + ", got " + ratString(k.Got)
	case *kind.ExclusiveMaximum:
		return "want < " + ratString(k.Want) + ", got " + ratString(k.Got)
	case *kind.MultipleOf:
		return "want a multiple of " + ratString(k.Want) + ", got " + ratString(k.Got)
	case *kind.MinLength:
		return fmt.Sprintf("want at least %d characters, got %d", k.Want, k.Got)
	case *kind.MaxLength:
		return fmt.Sprintf("want at most %d characters, got %d", k.Want, k.Got)
	case *kind.MinItems:
		return fmt.Sprintf("want at least %d items, got %d", k.Want, k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("want at most %d items, got %d", k.Want, k.Got)
	case *kind.MinProperties:
		return fmt.Sprintf("want at least %d properties, got %d", k.Want, k.Got)
	case *kind.MaxProperties:
		return fmt.Sprintf("want at most %d properties, got %d", k.Want, k.Got)
	case *kind.Pattern:
		return "want a string matching " + strconv.Quote(k.Want) + ", got " + strconv.Quote(k.Got)
	case *kind.UniqueItems:
		return fmt.Sprintf("want unique items, but [%d] and [%d] are equal", k.Duplicates[0], k.Duplicates[1])
	case *kind.FalseSchema:
		return "no value is allowed here"
	case *kind.Format:
		return "want format " + k.Want + ", got " + display(k.Got)
	}
	return k.LocalizedString(printer)
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
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
