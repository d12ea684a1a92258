package tools

import "testing"

// benchSchema is a realistic tool schema: six top-level fields, one nested
// object and an array of objects.
var benchSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"query":   map[string]any{"type": "string", "minLength": 1, "maxLength": 500},
		"count":   map[string]any{"type": "integer", "minimum": 1, "maximum": 10},
		"safe":    map[string]any{"type": "boolean"},
		"mode":    map[string]any{"type": "string", "enum": []any{"fast", "deep", "news"}},
		"filters": map[string]any{"type": "object", "properties": map[string]any{"lang": map[string]any{"type": "string", "pattern": "^[a-z]{2}$"}, "since_days": map[string]any{"type": "integer", "minimum": 0}}, "additionalProperties": false},
		"sources": map[string]any{"type": "array", "maxItems": 5, "items": map[string]any{"type": "object", "properties": map[string]any{"url": map[string]any{"type": "string"}, "weight": map[string]any{"type": "number"}}, "required": []any{"url"}}},
	},
	"required": []any{"query"},
}

func benchArgs() map[string]any {
	return map[string]any{
		"query":   "go structured concurrency",
		"count":   "5",
		"safe":    "true",
		"mode":    "Deep",
		"filters": map[string]any{"lang": "en", "since_days": 30.0},
		"sources": []any{map[string]any{"url": "https://go.dev", "weight": "0.5"}, map[string]any{"url": "https://pkg.go.dev", "weight": 1.0}},
	}
}

// BenchmarkCastValidate measures what the registry does per call before a
// tool runs: Cast, then Validate against the schema compiled once.
func BenchmarkCastValidate(b *testing.B) {
	s, err := CompileSchema(benchSchema)
	if err != nil {
		b.Fatal(err)
	}
	args := benchArgs()
	b.ReportAllocs()
	for b.Loop() {
		if probs := s.Validate(Cast(benchSchema, args)); probs != nil {
			b.Fatal(probs)
		}
	}
}

// BenchmarkCompileSchema is the one-off cost paid at Register.
func BenchmarkCompileSchema(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CompileSchema(benchSchema); err != nil {
			b.Fatal(err)
		}
	}
}
