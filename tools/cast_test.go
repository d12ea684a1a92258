package tools

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCast(t *testing.T) {
	obj := func(props map[string]any) map[string]any {
		return map[string]any{"type": "object", "properties": props}
	}
	typ := func(t any) map[string]any { return map[string]any{"type": t} }
	tests := []struct {
		name   string
		schema map[string]any
		args   map[string]any
		want   map[string]any
	}{
		{"string to integer", obj(map[string]any{"n": typ("integer")}), map[string]any{"n": "10"}, map[string]any{"n": 10}},
		{"padded string to integer", obj(map[string]any{"n": typ("integer")}), map[string]any{"n": " 42 "}, map[string]any{"n": 42}},
		{"negative string to integer", obj(map[string]any{"n": typ("integer")}), map[string]any{"n": "-7"}, map[string]any{"n": -7}},
		{"exponent string to integer", obj(map[string]any{"n": typ("integer")}), map[string]any{"n": "1e3"}, map[string]any{"n": 1000}},
		{"integral float to integer", obj(map[string]any{"n": typ("integer")}), map[string]any{"n": 10.0}, map[string]any{"n": 10}},
		{"json number to integer", obj(map[string]any{"n": typ("integer")}), map[string]any{"n": json.Number("12")}, map[string]any{"n": 12}},
		{"fractional float stays", obj(map[string]any{"n": typ("integer")}), map[string]any{"n": 10.5}, map[string]any{"n": 10.5}},
		{"fractional string stays", obj(map[string]any{"n": typ("integer")}), map[string]any{"n": "10.5"}, map[string]any{"n": "10.5"}},
		{"word stays for integer", obj(map[string]any{"n": typ("integer")}), map[string]any{"n": "ten"}, map[string]any{"n": "ten"}},
		{"hex string stays", obj(map[string]any{"n": typ("integer")}), map[string]any{"n": "0x10"}, map[string]any{"n": "0x10"}},
		{"string to number", obj(map[string]any{"x": typ("number")}), map[string]any{"x": "3.5"}, map[string]any{"x": 3.5}},
		{"whole string to number", obj(map[string]any{"x": typ("number")}), map[string]any{"x": "3"}, map[string]any{"x": 3}},
		{"NaN string stays", obj(map[string]any{"x": typ("number")}), map[string]any{"x": "NaN"}, map[string]any{"x": "NaN"}},
		{"Inf string stays", obj(map[string]any{"x": typ("number")}), map[string]any{"x": "Inf"}, map[string]any{"x": "Inf"}},
		{"json number to number", obj(map[string]any{"x": typ("number")}), map[string]any{"x": json.Number("2.25")}, map[string]any{"x": 2.25}},
		{"true string", obj(map[string]any{"b": typ("boolean")}), map[string]any{"b": "true"}, map[string]any{"b": true}},
		{"False string", obj(map[string]any{"b": typ("boolean")}), map[string]any{"b": "False"}, map[string]any{"b": false}},
		{"1 string", obj(map[string]any{"b": typ("boolean")}), map[string]any{"b": "1"}, map[string]any{"b": true}},
		{"0 string", obj(map[string]any{"b": typ("boolean")}), map[string]any{"b": "0"}, map[string]any{"b": false}},
		{"yes string", obj(map[string]any{"b": typ("boolean")}), map[string]any{"b": "yes"}, map[string]any{"b": true}},
		{"no string", obj(map[string]any{"b": typ("boolean")}), map[string]any{"b": "NO"}, map[string]any{"b": false}},
		{"number 1 to bool", obj(map[string]any{"b": typ("boolean")}), map[string]any{"b": 1.0}, map[string]any{"b": true}},
		{"maybe stays", obj(map[string]any{"b": typ("boolean")}), map[string]any{"b": "maybe"}, map[string]any{"b": "maybe"}},
		{"number 2 stays for bool", obj(map[string]any{"b": typ("boolean")}), map[string]any{"b": 2.0}, map[string]any{"b": 2.0}},
		{"integer to string", obj(map[string]any{"s": typ("string")}), map[string]any{"s": 10.0}, map[string]any{"s": "10"}},
		{"float to string", obj(map[string]any{"s": typ("string")}), map[string]any{"s": 2.5}, map[string]any{"s": "2.5"}},
		{"bool to string", obj(map[string]any{"s": typ("string")}), map[string]any{"s": true}, map[string]any{"s": "true"}},
		{"object stays for string", obj(map[string]any{"s": typ("string")}), map[string]any{"s": map[string]any{}}, map[string]any{"s": map[string]any{}}},
		{"enum case fixed", obj(map[string]any{"a": map[string]any{"type": "string", "enum": []any{"add", "list"}}}), map[string]any{"a": "ADD"}, map[string]any{"a": "add"}},
		{"enum unknown stays", obj(map[string]any{"a": map[string]any{"type": "string", "enum": []any{"add"}}}), map[string]any{"a": "drop"}, map[string]any{"a": "drop"}},
		{"json string to array", obj(map[string]any{"l": map[string]any{"type": "array", "items": typ("integer")}}), map[string]any{"l": `[1, "2", 3.0]`}, map[string]any{"l": []any{1, 2, 3}}},
		{"scalar wrapped into array", obj(map[string]any{"l": map[string]any{"type": "array", "items": typ("string")}}), map[string]any{"l": "a.txt"}, map[string]any{"l": []any{"a.txt"}}},
		{"number wrapped and cast", obj(map[string]any{"l": map[string]any{"type": "array", "items": typ("string")}}), map[string]any{"l": 5.0}, map[string]any{"l": []any{"5"}}},
		{"null not wrapped", obj(map[string]any{"l": typ("array")}), map[string]any{"l": nil}, map[string]any{"l": nil}},
		{"json string to object", obj(map[string]any{"o": obj(map[string]any{"n": typ("integer")})}), map[string]any{"o": `{"n": "5"}`}, map[string]any{"o": map[string]any{"n": 5}}},
		{"broken json object stays", obj(map[string]any{"o": typ("object")}), map[string]any{"o": `{"n": `}, map[string]any{"o": `{"n": `}},
		{"nested objects", obj(map[string]any{"user": obj(map[string]any{"age": typ("integer"), "tags": map[string]any{"type": "array", "items": typ("string")}})}),
			map[string]any{"user": map[string]any{"age": "30", "tags": []any{1.0, true}}},
			map[string]any{"user": map[string]any{"age": 30, "tags": []any{"1", "true"}}}},
		{"array of objects", obj(map[string]any{"items": map[string]any{"type": "array", "items": obj(map[string]any{"qty": typ("integer")})}}),
			map[string]any{"items": []any{map[string]any{"qty": "1"}, map[string]any{"qty": 2.0}}},
			map[string]any{"items": []any{map[string]any{"qty": 1}, map[string]any{"qty": 2}}}},
		{"prefixItems", obj(map[string]any{"p": map[string]any{"type": "array", "prefixItems": []any{typ("integer"), typ("boolean")}, "items": typ("string")}}),
			map[string]any{"p": []any{"1", "yes", 3.0}}, map[string]any{"p": []any{1, true, "3"}}},
		{"additionalProperties schema", map[string]any{"type": "object", "additionalProperties": typ("integer")},
			map[string]any{"a": "1", "b": "2"}, map[string]any{"a": 1, "b": 2}},
		{"unknown property kept", obj(map[string]any{"n": typ("integer")}), map[string]any{"n": "1", "extra": "x"}, map[string]any{"n": 1, "extra": "x"}},
		{"properties without type", map[string]any{"properties": map[string]any{"n": typ("integer")}}, map[string]any{"n": "4"}, map[string]any{"n": 4}},
		{"type list keeps matching", obj(map[string]any{"v": typ([]any{"integer", "string"})}), map[string]any{"v": "10"}, map[string]any{"v": "10"}},
		{"type list converts in order", obj(map[string]any{"v": typ([]any{"integer", "boolean"})}), map[string]any{"v": "true"}, map[string]any{"v": true}},
		{"nullable integer", obj(map[string]any{"v": typ([]any{"integer", "null"})}), map[string]any{"v": "3"}, map[string]any{"v": 3}},
		{"anyOf picks convertible branch", obj(map[string]any{"v": map[string]any{"anyOf": []any{typ("integer"), typ("null")}}}), map[string]any{"v": "8"}, map[string]any{"v": 8}},
		{"anyOf keeps matching branch", obj(map[string]any{"v": map[string]any{"oneOf": []any{typ("string"), typ("integer")}}}), map[string]any{"v": "8"}, map[string]any{"v": "8"}},
		{"no schema for value", obj(map[string]any{"n": true}), map[string]any{"n": "1"}, map[string]any{"n": "1"}},
		{"nil args", obj(nil), nil, map[string]any{}},
		{"nil schema", nil, map[string]any{"a": "1"}, map[string]any{"a": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Cast(tt.schema, tt.args)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Cast() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCastDoesNotMutateInput(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"user": map[string]any{"type": "object", "properties": map[string]any{"age": map[string]any{"type": "integer"}}},
		"list": map[string]any{"type": "array", "items": map[string]any{"type": "integer"}},
	}}
	args := map[string]any{"user": map[string]any{"age": "30"}, "list": []any{"1", "2"}, "other": []any{"x"}}
	before := map[string]any{"user": map[string]any{"age": "30"}, "list": []any{"1", "2"}, "other": []any{"x"}}
	got := Cast(schema, args)
	if diff := cmp.Diff(before, args); diff != "" {
		t.Fatalf("input mutated (-before +after):\n%s", diff)
	}
	// The output must not share containers with the input either.
	got["other"].([]any)[0] = "changed"
	got["user"].(map[string]any)["age"] = 1
	if diff := cmp.Diff(before, args); diff != "" {
		t.Fatalf("output shares containers with input (-before +after):\n%s", diff)
	}
}

func TestCastCyclicSchemaTerminates(t *testing.T) {
	node := map[string]any{"type": "object"}
	node["properties"] = map[string]any{"child": node}
	args := map[string]any{}
	cur := args
	for range 200 {
		next := map[string]any{}
		cur["child"] = next
		cur = next
	}
	_ = Cast(node, args) // must return, not overflow the stack
}

func TestArgs(t *testing.T) {
	a := Args{"s": "x", "i": 3, "f": 4.0, "frac": 4.5, "n": json.Number("7"), "b": true, "nil": nil, "str": "12"}
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"string", a.String("s"), "x"},
		{"string missing", a.String("zz"), ""},
		{"int", a.Int("i", -1), 3},
		{"int from float", a.Int("f", -1), 4},
		{"int from fraction", a.Int("frac", -1), -1},
		{"int from json number", a.Int("n", -1), 7},
		{"int from string", a.Int("str", -1), 12},
		{"int default", a.Int("zz", 9), 9},
		{"float", a.Float("frac", 0), 4.5},
		{"float from int", a.Float("i", 0), 3.0},
		{"bool", a.Bool("b", false), true},
		{"bool default", a.Bool("s", true), true},
		{"has", a.Has("s"), true},
		{"has nil", a.Has("nil"), false},
	}
	for _, tt := range tests {
		if !cmp.Equal(tt.got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

func TestNumberOfKinds(t *testing.T) {
	type named int
	tests := []struct {
		v    any
		want float64
		ok   bool
	}{
		{float64(1.5), 1.5, true}, {float32(2.5), 2.5, true},
		{int(-3), -3, true}, {int8(-4), -4, true}, {int16(5), 5, true}, {int32(6), 6, true}, {int64(-7), -7, true},
		{uint(8), 8, true}, {uint8(9), 9, true}, {uint16(10), 10, true}, {uint32(11), 11, true}, {uint64(12), 12, true},
		{json.Number("13.5"), 13.5, true}, {json.Number("x"), 0, false},
		{named(14), 0, false}, {"15", 0, false}, {nil, 0, false}, {true, 0, false},
	}
	for _, tt := range tests {
		got, ok := numberOf(tt.v)
		if got != tt.want || ok != tt.ok {
			t.Errorf("numberOf(%T %v) = %v, %v, want %v, %v", tt.v, tt.v, got, ok, tt.want, tt.ok)
		}
	}
}
