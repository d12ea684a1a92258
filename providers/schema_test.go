package providers_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/providers"
)

func mustMap(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return m
}

func TestNormalizeSchema(t *testing.T) {
	tests := []struct {
		name    string
		dialect providers.SchemaDialect
		in      string // JSON; "null" for a nil schema
		want    string
	}{
		{name: "nil schema", dialect: providers.DialectOpenAI, in: `null`,
			want: `{"type":"object","properties":{}}`},
		{name: "object without properties", dialect: providers.DialectOpenAI, in: `{"type":"object"}`,
			want: `{"type":"object","properties":{}}`},
		{name: "missing type at root and nested", dialect: providers.DialectAnthropic,
			in:   `{"properties":{"opts":{"properties":{"x":{"type":"integer"}}}}}`,
			want: `{"type":"object","properties":{"opts":{"type":"object","properties":{"x":{"type":"integer"}}}}}`},
		{name: "array gets items", dialect: providers.DialectOpenAI,
			in:   `{"type":"object","properties":{"tags":{"type":"array"}}}`,
			want: `{"type":"object","properties":{"tags":{"type":"array","items":{}}}}`},
		{name: "local $defs inlined", dialect: providers.DialectOpenAI,
			in: `{"type":"object","$defs":{"Pt":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}},
			      "properties":{"a":{"$ref":"#/$defs/Pt","description":"start"},"b":{"$ref":"#/$defs/Pt"}}}`,
			want: `{"type":"object","properties":{
			      "a":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"],"description":"start"},
			      "b":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}}}`},
		{name: "definitions and nested refs", dialect: providers.DialectOpenAI,
			in: `{"type":"object","definitions":{"Name":{"type":"string"},"User":{"type":"object","properties":{"name":{"$ref":"#/definitions/Name"}}}},
			      "properties":{"user":{"$ref":"#/definitions/User"},"list":{"type":"array","items":{"$ref":"#/definitions/Name"}}}}`,
			want: `{"type":"object","properties":{"user":{"type":"object","properties":{"name":{"type":"string"}}},"list":{"type":"array","items":{"type":"string"}}}}`},
		{name: "recursive ref terminates", dialect: providers.DialectOpenAI,
			in:   `{"type":"object","$defs":{"Node":{"type":"object","properties":{"next":{"$ref":"#/$defs/Node"}}}},"properties":{"head":{"$ref":"#/$defs/Node"}}}`,
			want: recursive(8)},
		{name: "unresolvable ref becomes open object", dialect: providers.DialectOpenAI,
			in:   `{"type":"object","properties":{"x":{"$ref":"https://example.com/s.json"}}}`,
			want: `{"type":"object","properties":{"x":{"type":"object","properties":{}}}}`},
		{name: "root anyOf collapses", dialect: providers.DialectAnthropic,
			in:   `{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a","c"]},{"type":"object","properties":{"b":{"type":"string"}},"required":["c"]}]}`,
			want: `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["c"]}`},
		{name: "openai keeps anyOf null and formats", dialect: providers.DialectOpenAI,
			in:   `{"type":"object","additionalProperties":false,"properties":{"u":{"type":"string","format":"uri"},"n":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`,
			want: `{"type":"object","additionalProperties":false,"properties":{"u":{"type":"string","format":"uri"},"n":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`},
		{name: "gemini drops what it rejects", dialect: providers.DialectGemini,
			in: `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,
			      "properties":{"u":{"type":"string","format":"uri"},"when":{"type":"string","format":"date-time"},"e":{"type":"string","format":"enum","enum":["a"]},
			      "k":{"const":"fixed"},"ex":{"type":"integer","examples":[1]}}}`,
			want: `{"type":"object","properties":{"u":{"type":"string"},"when":{"type":"string","format":"date-time"},"e":{"type":"string","format":"enum","enum":["a"]},
			      "k":{"enum":["fixed"]},"ex":{"type":"integer"}}}`},
		{name: "gemini anyOf with null becomes nullable", dialect: providers.DialectGemini,
			in:   `{"type":"object","properties":{"n":{"anyOf":[{"type":"string","description":"name"},{"type":"null"}],"default":null}}}`,
			want: `{"type":"object","properties":{"n":{"type":"string","description":"name","nullable":true,"default":null}}}`},
		{name: "gemini type array with null", dialect: providers.DialectGemini,
			in:   `{"type":"object","properties":{"n":{"type":["integer","null"]},"m":{"type":["string","number"]}}}`,
			want: `{"type":"object","properties":{"n":{"type":"integer","nullable":true},"m":{"anyOf":[{"type":"string"},{"type":"number"}]}}}`},
		{name: "gemini merges allOf", dialect: providers.DialectGemini,
			in:   `{"type":"object","properties":{"o":{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"string"}}}]}}}`,
			want: `{"type":"object","properties":{"o":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"]}}}`},
		{name: "gemini array items default", dialect: providers.DialectGemini,
			in:   `{"type":"object","properties":{"xs":{"type":"array"}}}`,
			want: `{"type":"object","properties":{"xs":{"type":"array","items":{"type":"string"}}}}`},
		{name: "literal values are not schemas", dialect: providers.DialectOpenAI,
			in:   `{"type":"object","properties":{"cfg":{"type":"object","default":{"properties":1}}}}`,
			want: `{"type":"object","properties":{"cfg":{"type":"object","properties":{},"default":{"properties":1}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in map[string]any
			if tt.in != "null" {
				in = mustMap(t, tt.in)
			}
			before, _ := json.Marshal(in)
			got := providers.NormalizeSchema(in, tt.dialect)
			if diff := cmp.Diff(mustMap(t, tt.want), roundTrip(t, got)); diff != "" {
				t.Errorf("schema (-want +got):\n%s", diff)
			}
			after, _ := json.Marshal(in)
			if string(before) != string(after) {
				t.Errorf("input modified:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// recursive is the expected inlining of a self-referencing Node: levels
// copies of Node, then an open object where the depth limit stops it.
func recursive(levels int) string {
	node := `{"type":"object","properties":{}}`
	for range levels {
		node = `{"type":"object","properties":{"next":` + node + `}}`
	}
	return `{"type":"object","properties":{"head":` + node + `}}`
}

func TestNormalizeSchemaGoLiterals(t *testing.T) {
	// Schemas built in Go use []string for required and enum.
	in := map[string]any{"type": "object", "required": []string{"path"},
		"properties": map[string]any{"mode": map[string]any{"type": "string", "enum": []string{"r", "w"}}}}
	got := roundTrip(t, providers.NormalizeSchema(in, providers.DialectGemini))
	want := mustMap(t, `{"type":"object","required":["path"],"properties":{"mode":{"type":"string","enum":["r","w"]}}}`)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("schema (-want +got):\n%s", diff)
	}
}

func TestNormalizeTools(t *testing.T) {
	tools := []providers.ToolDefinition{{Name: "a", Parameters: map[string]any{"type": "object"}}}
	got := providers.NormalizeTools(tools, providers.DialectOpenAI)
	if _, ok := got[0].Parameters["properties"]; !ok {
		t.Error("properties not added")
	}
	if _, ok := tools[0].Parameters["properties"]; ok {
		t.Error("caller's tool modified")
	}
}

func roundTrip(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return mustMap(t, string(b))
}
