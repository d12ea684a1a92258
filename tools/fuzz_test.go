package tools

import (
	"encoding/json"
	"testing"
)

// FuzzCastValidate feeds arbitrary JSON arguments against arbitrary JSON
// schemas: Cast and Validate must never panic, Cast must not mutate its
// input, and its output must still be JSON.
func FuzzCastValidate(f *testing.F) {
	seeds := []struct{ schema, args string }{
		{`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`, `{"n":"5"}`},
		{`{"type":"object","properties":{"l":{"type":"array","items":{"type":"integer"}}}}`, `{"l":"[1,\"2\"]"}`},
		{`{"type":"object","properties":{"o":{"type":"object","properties":{"b":{"type":"boolean"}}}}}`, `{"o":"{\"b\":\"yes\"}"}`},
		{`{"type":"object","additionalProperties":false}`, `{"x":1}`},
		{`{"type":"object","properties":{"v":{"anyOf":[{"type":"integer"},{"type":"null"}]}}}`, `{"v":"7"}`},
		{`{"type":"object","properties":{"v":{"type":["string","number"],"enum":["a",1]}}}`, `{"v":true}`},
		{`{"type":"object","properties":{"p":{"type":"string","pattern":"^[a-z]+$","maxLength":3}}}`, `{"p":12345}`},
		{`{"$ref":"#"}`, `{}`},
		{`{"type":"object","properties":{"a":{"$ref":"#/properties/a"}}}`, `{"a":{"a":{}}}`},
		{`{"type":5,"properties":"x","items":[1]}`, `{"a":[[[]]]}`},
		{`{"properties":{"t":{"prefixItems":[{"type":"integer"}],"items":{"type":"string"}}}}`, `{"t":["1",2,3]}`},
		{`{"type":"object","properties":{"n":{"type":"integer"}}}`, `{"n":1e400}`},
	}
	for _, s := range seeds {
		f.Add(s.schema, s.args)
	}
	f.Fuzz(func(t *testing.T, schemaJSON, argsJSON string) {
		var schema map[string]any
		if json.Unmarshal([]byte(schemaJSON), &schema) != nil {
			return
		}
		var args map[string]any
		if json.Unmarshal([]byte(argsJSON), &args) != nil {
			return
		}
		before, err := json.Marshal(args)
		if err != nil {
			return
		}
		cast := Cast(schema, args)
		if cast == nil {
			t.Fatal("Cast returned nil")
		}
		after, _ := json.Marshal(args)
		if string(before) != string(after) {
			t.Fatalf("Cast mutated its input: %s -> %s", before, after)
		}
		if _, err := json.Marshal(cast); err != nil {
			t.Fatalf("Cast output is not JSON: %v", err)
		}
		_ = Validate(schema, cast)
		_ = Validate(schema, args)
	})
}
