package providers_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/providers"
)

func TestParseToolArguments(t *testing.T) {
	tests := []struct {
		name      string
		raw       string
		want      map[string]any
		wantFixed string
		wantErr   bool
	}{
		{name: "valid", raw: `{"a":1}`, want: map[string]any{"a": 1.0}, wantFixed: `{"a":1}`},
		{name: "empty", raw: "  ", want: map[string]any{}, wantFixed: "{}"},
		{name: "null", raw: "null", want: map[string]any{}, wantFixed: "{}"},
		{name: "trailing comma object", raw: `{"a":1,}`, want: map[string]any{"a": 1.0}, wantFixed: `{"a":1}`},
		{name: "trailing comma array", raw: `{"xs":[1,2,],}`, want: map[string]any{"xs": []any{1.0, 2.0}}, wantFixed: `{"xs":[1,2]}`},
		{name: "comma inside string kept", raw: `{"s":"a,}"`, want: map[string]any{"s": "a,}"}, wantFixed: `{"s":"a,}"}`},
		{name: "unclosed braces", raw: `{"a":{"b":[1,2`, want: map[string]any{"a": map[string]any{"b": []any{1.0, 2.0}}}, wantFixed: `{"a":{"b":[1,2]}}`},
		{name: "unterminated string", raw: `{"path":"/tmp/fi`, want: map[string]any{"path": "/tmp/fi"}, wantFixed: `{"path":"/tmp/fi"}`},
		{name: "dangling escape", raw: `{"p":"a\`, want: map[string]any{"p": "a"}, wantFixed: `{"p":"a"}`},
		{name: "dangling colon", raw: `{"a":1,"b":`, want: map[string]any{"a": 1.0, "b": nil}, wantFixed: `{"a":1,"b":null}`},
		{name: "code fence", raw: "```json\n{\"a\": 1}\n```", want: map[string]any{"a": 1.0}, wantFixed: `{"a": 1}`},
		{name: "bare fence", raw: "```\n{\"a\": 1}\n```", want: map[string]any{"a": 1.0}, wantFixed: `{"a": 1}`},
		{name: "prose around", raw: `Sure! {"a": 1} Hope that helps.`, want: map[string]any{"a": 1.0}, wantFixed: `{"a": 1}`},
		{name: "double encoded", raw: `"{\"a\": 1}"`, want: map[string]any{"a": 1.0}, wantFixed: `"{\"a\": 1}"`},
		{name: "array", raw: `[1,2]`, wantErr: true},
		{name: "number", raw: `42`, wantErr: true},
		{name: "garbage", raw: `path = /tmp`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, fixed, err := providers.ParseToolArguments(tt.raw)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("want error, got %v", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if fixed != tt.wantFixed {
				t.Errorf("fixed = %q, want %q", fixed, tt.wantFixed)
			}
		})
	}
}

func TestNewToolCallRequestReportsBrokenArguments(t *testing.T) {
	tc := providers.NewToolCallRequest("id", "exec", `command: ls`)
	if tc.ArgumentsError == "" || tc.Arguments == nil || len(tc.Arguments) != 0 || tc.RawArguments != `command: ls` {
		t.Errorf("got %+v", tc)
	}
}
