package tools

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidate(t *testing.T) {
	obj := func(props map[string]any, required ...any) map[string]any {
		s := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			s["required"] = required
		}
		return s
	}
	userSchema := obj(map[string]any{
		"user": obj(map[string]any{
			"name": map[string]any{"type": "string", "minLength": 1},
			"age":  map[string]any{"type": "integer", "minimum": 0},
		}, "name"),
		"items": map[string]any{"type": "array", "items": obj(map[string]any{
			"name": map[string]any{"type": "string"},
			"qty":  map[string]any{"type": "integer", "exclusiveMinimum": 0},
		}, "name")},
	})
	tests := []struct {
		name   string
		schema map[string]any
		args   map[string]any
		want   []ValidationError
	}{
		{"valid", userSchema, map[string]any{"user": map[string]any{"name": "a", "age": 3}}, nil},
		{"type string", obj(map[string]any{"s": map[string]any{"type": "string"}}), map[string]any{"s": 1}, []ValidationError{{"s", "want string, got number"}}},
		{"type integer", obj(map[string]any{"n": map[string]any{"type": "integer"}}), map[string]any{"n": "x"}, []ValidationError{{"n", "want integer, got string"}}},
		{"fraction is not integer", obj(map[string]any{"n": map[string]any{"type": "integer"}}), map[string]any{"n": 1.5}, []ValidationError{{"n", "want integer, got number"}}},
		{"type number", obj(map[string]any{"n": map[string]any{"type": "number"}}), map[string]any{"n": true}, []ValidationError{{"n", "want number, got boolean"}}},
		{"type boolean", obj(map[string]any{"b": map[string]any{"type": "boolean"}}), map[string]any{"b": "yes"}, []ValidationError{{"b", "want boolean, got string"}}},
		{"type array", obj(map[string]any{"a": map[string]any{"type": "array"}}), map[string]any{"a": map[string]any{}}, []ValidationError{{"a", "want array, got object"}}},
		{"type object", obj(map[string]any{"o": map[string]any{"type": "object"}}), map[string]any{"o": []any{}}, []ValidationError{{"o", "want object, got array"}}},
		{"type list", obj(map[string]any{"v": map[string]any{"type": []any{"string", "null"}}}), map[string]any{"v": 1}, []ValidationError{{"v", "want null or string, got number"}}},
		{"required", obj(map[string]any{"a": map[string]any{}, "b": map[string]any{}}, "a", "b"), map[string]any{}, []ValidationError{{"a", "missing required property"}, {"b", "missing required property"}}},
		{"minimum", obj(map[string]any{"n": map[string]any{"type": "integer", "minimum": 1}}), map[string]any{"n": 0}, []ValidationError{{"n", "want >= 1, got 0"}}},
		{"maximum", obj(map[string]any{"n": map[string]any{"type": "number", "maximum": 2.5}}), map[string]any{"n": 3}, []ValidationError{{"n", "want <= 2.5, got 3"}}},
		{"exclusiveMinimum", obj(map[string]any{"n": map[string]any{"exclusiveMinimum": 1}}), map[string]any{"n": 1}, []ValidationError{{"n", "want > 1, got 1"}}},
		{"exclusiveMaximum", obj(map[string]any{"n": map[string]any{"exclusiveMaximum": 10}}), map[string]any{"n": 10}, []ValidationError{{"n", "want < 10, got 10"}}},
		{"minLength", obj(map[string]any{"s": map[string]any{"minLength": 3}}), map[string]any{"s": "ab"}, []ValidationError{{"s", "want at least 3 characters, got 2"}}},
		{"maxLength counts characters", obj(map[string]any{"s": map[string]any{"maxLength": 2}}), map[string]any{"s": "äöü"}, []ValidationError{{"s", "want at most 2 characters, got 3"}}},
		{"enum", obj(map[string]any{"a": map[string]any{"enum": []any{"add", "list"}}}), map[string]any{"a": "drop"}, []ValidationError{{"a", `want one of "add", "list", got "drop"`}}},
		{"pattern", obj(map[string]any{"s": map[string]any{"type": "string", "pattern": "^[a-z]+$"}}), map[string]any{"s": "AB"}, []ValidationError{{"s", `want a string matching "^[a-z]+$", got "AB"`}}},
		{"minItems", obj(map[string]any{"l": map[string]any{"type": "array", "minItems": 1}}), map[string]any{"l": []any{}}, []ValidationError{{"l", "want at least 1 items, got 0"}}},
		{"maxItems", obj(map[string]any{"l": map[string]any{"type": "array", "maxItems": 1}}), map[string]any{"l": []any{1, 2}}, []ValidationError{{"l", "want at most 1 items, got 2"}}},
		{"additionalProperties false", map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{}}, "additionalProperties": false},
			map[string]any{"a": 1, "zz": 2, "yy": 3}, []ValidationError{{"yy", "unknown property (not allowed here)"}, {"zz", "unknown property (not allowed here)"}}},
		{"nested path", userSchema, map[string]any{"user": map[string]any{"name": "a", "age": "old"}}, []ValidationError{{"user.age", "want integer, got string"}}},
		{"array index path", userSchema, map[string]any{"items": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}, map[string]any{"name": 3}}},
			[]ValidationError{{"items[2].name", "want string, got number"}}},
		{"required inside array", userSchema, map[string]any{"items": []any{map[string]any{"qty": 1}}}, []ValidationError{{"items[0].name", "missing required property"}}},
		{"all errors collected", userSchema, map[string]any{
			"user":  map[string]any{"name": "", "age": -1},
			"items": []any{map[string]any{"name": "a", "qty": 0}, map[string]any{"qty": "x"}},
		}, []ValidationError{
			{"items[0].qty", "want > 0, got 0"},
			{"items[1].name", "missing required property"},
			{"items[1].qty", "want integer, got string"},
			{"user.age", "want >= 0, got -1"},
			{"user.name", "want at least 1 characters, got 0"},
		}},
		{"odd key quoted", obj(map[string]any{"a.b": map[string]any{"type": "integer"}}), map[string]any{"a.b": "x"}, []ValidationError{{`["a.b"]`, "want integer, got string"}}},
		{"root type", map[string]any{"type": "object", "minProperties": 1}, map[string]any{}, []ValidationError{{"", "want at least 1 properties, got 0"}}},
		{"anyOf", obj(map[string]any{"v": map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}}), map[string]any{"v": true},
			[]ValidationError{{"v", "want string or integer, got boolean"}}},
		{"anyOf nested reasons", obj(map[string]any{"v": map[string]any{"anyOf": []any{map[string]any{"type": "string", "minLength": 5}, map[string]any{"type": "integer"}}}}), map[string]any{"v": "ab"},
			[]ValidationError{{"v", "does not match any of the allowed forms (v: want at least 5 characters, got 2; v: want integer, got string)"}}},
		{"Go slices accepted", obj(map[string]any{"l": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}), map[string]any{"l": []string{"a"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Validate(tt.schema, tt.args)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompileSchemaErrors(t *testing.T) {
	tests := []struct {
		name   string
		schema map[string]any
		want   string
	}{
		{"bad type name", map[string]any{"type": "integr"}, "compile schema"},
		{"bad minimum", map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"minimum": "one"}}}, "compile schema"},
		{"bad pattern", map[string]any{"type": "string", "pattern": "(["}, "compile schema"},
		{"external ref", map[string]any{"$ref": "file:///etc/passwd"}, "compile schema"},
		{"not JSON", map[string]any{"type": func() {}}, "not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CompileSchema(tt.schema)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CompileSchema() error = %v, want one containing %q", err, tt.want)
			}
			probs := Validate(tt.schema, map[string]any{})
			if len(probs) != 1 || !strings.HasPrefix(probs[0].Message, "invalid tool schema") {
				t.Errorf("Validate() = %v, want one invalid-schema problem", probs)
			}
		})
	}
}

func TestCastThenValidate(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"command": map[string]any{"type": "string"},
		"timeout": map[string]any{"type": "integer", "minimum": 1},
		"verbose": map[string]any{"type": "boolean"},
		"paths":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
	}, "required": []any{"command"}}
	args := map[string]any{"command": 42.0, "timeout": "30", "verbose": "yes", "paths": "a.txt"}
	got := Cast(schema, args)
	if probs := Validate(schema, got); probs != nil {
		t.Fatalf("Validate(Cast()) = %v, want none", probs)
	}
	want := map[string]any{"command": "42", "timeout": 30, "verbose": true, "paths": []any{"a.txt"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

// What the move to github.com/google/jsonschema-go must keep or adds:
// recursion through $defs, the rarer keywords worded for the model, and
// schemas the library cannot take refused at compile time, not crashing
// the process at the first call.
func TestValidateMore(t *testing.T) {
	tree := map[string]any{
		"$defs": map[string]any{"node": map[string]any{"type": "object", "properties": map[string]any{
			"name":  map[string]any{"type": "string"},
			"child": map[string]any{"$ref": "#/$defs/node"},
		}}},
		"$ref": "#/$defs/node",
	}
	tests := []struct {
		name   string
		schema map[string]any
		args   map[string]any
		want   []ValidationError
	}{
		{"recursive ref", tree, map[string]any{"child": map[string]any{"child": map[string]any{"name": 5}}}, []ValidationError{{"child.child.name", "want string, got number"}}},
		{"recursive ref valid", tree, map[string]any{"child": map[string]any{"name": "x"}}, nil},
		{"const", map[string]any{"properties": map[string]any{"k": map[string]any{"const": "v"}}}, map[string]any{"k": "w"}, []ValidationError{{"k", `want "v", got "w"`}}},
		{"false schema", map[string]any{"properties": map[string]any{"k": false}}, map[string]any{"k": 1}, []ValidationError{{"k", "no value is allowed here"}}},
		{"uniqueItems", map[string]any{"properties": map[string]any{"l": map[string]any{"uniqueItems": true}}}, map[string]any{"l": []any{1, 2, 1}}, []ValidationError{{"l", "want unique items, but [0] and [2] are equal"}}},
		{"two keywords at one place", map[string]any{"properties": map[string]any{"s": map[string]any{"type": "string", "minLength": 5, "pattern": "^[a-z]+$"}}}, map[string]any{"s": "AB"},
			[]ValidationError{{"s", `want a string matching "^[a-z]+$", got "AB"`}, {"s", "want at least 5 characters, got 2"}}},
		{"oneOf matches two", map[string]any{"properties": map[string]any{"v": map[string]any{"oneOf": []any{map[string]any{"type": "integer"}, map[string]any{"type": "number"}}}}}, map[string]any{"v": 1},
			[]ValidationError{{"v", "matches more than one of the allowed forms (0 and 1); want exactly one"}}},
		{"patternProperties beside additionalProperties", map[string]any{"properties": map[string]any{"a": map[string]any{"type": "integer"}},
			"patternProperties": map[string]any{"^x-": map[string]any{"type": "string"}}, "additionalProperties": false},
			map[string]any{"a": 1, "x-ok": "s", "zz": 2}, []ValidationError{{"", `unknown properties (not allowed here): ["zz"]`}}},
		{"draft-04 read as 2020-12", map[string]any{"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "required": []any{"a"}}, map[string]any{}, []ValidationError{{"a", "missing required property"}}},
		{"draft-07 items", map[string]any{"$schema": "http://json-schema.org/draft-07/schema#", "properties": map[string]any{"l": map[string]any{"items": map[string]any{"type": "string"}}}}, map[string]any{"l": []any{"a", 2}},
			[]ValidationError{{"l[1]", "want string, got number"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Validate(tt.schema, tt.args)); diff != "" {
				t.Errorf("Validate() mismatch (-want +got):\n%s", diff)
			}
		})
	}
	for _, loop := range []map[string]any{
		{"$ref": "#"},
		{"properties": map[string]any{"a": map[string]any{"$ref": "#/properties/a"}}},
		{"anyOf": []any{map[string]any{"$ref": "#/$defs/x"}}, "$defs": map[string]any{"x": map[string]any{"allOf": []any{map[string]any{"$ref": "#"}}}}},
	} {
		if _, err := CompileSchema(loop); err == nil || !strings.Contains(err.Error(), "$ref loop") {
			t.Errorf("CompileSchema(%v) = %v, want a $ref loop error", loop, err)
		}
	}
}
