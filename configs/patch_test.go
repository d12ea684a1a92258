package configs

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// TestPatchJSON: only the value at the path changes, byte for byte; a new
// key is placed and indented like its siblings.
func TestPatchJSON(t *testing.T) {
	tests := []struct {
		name, raw, path string
		value           any
		want            string
	}{
		{
			name: "replace a string, the rest as written",
			raw: "{\n    \"zeta\": \"${ZETA_KEY}\",\n    \"gateway\": {\"port\": 18790,   \"webui\": {\"password\": \"old\"}},\n" +
				"    \"myOwnKey\": \"a&b <c>\"\n}\n",
			path:  "gateway.webui.password",
			value: "$2a$10$new&<>",
			want: "{\n    \"zeta\": \"${ZETA_KEY}\",\n    \"gateway\": {\"port\": 18790,   \"webui\": {\"password\": \"$2a$10$new&<>\"}},\n" +
				"    \"myOwnKey\": \"a&b <c>\"\n}\n",
		},
		{
			name:  "add a key after the last sibling, indented like it",
			raw:   "{\n  \"tools\": {\n    \"web\": true,\n    \"exec\": {\n      \"approval\": \"risky\"\n    }\n  }\n}\n",
			path:  "tools.exec.approvedCommands",
			value: []string{"^ls$"},
			want: "{\n  \"tools\": {\n    \"web\": true,\n    \"exec\": {\n      \"approval\": \"risky\",\n" +
				"      \"approvedCommands\": [\n        \"^ls$\"\n      ]\n    }\n  }\n}\n",
		},
		{
			name:  "tabs, and the objects on the way created",
			raw:   "{\n\t\"gateway\": {\n\t\t\"port\": 1\n\t}\n}",
			path:  "gateway.webui.password",
			value: "h",
			want:  "{\n\t\"gateway\": {\n\t\t\"port\": 1,\n\t\t\"webui\": {\n\t\t\t\"password\": \"h\"\n\t\t}\n\t}\n}",
		},
		{
			name:  "a missing section goes last in the top level",
			raw:   "{\n   \"b\": 1,\n   \"a\": 2\n}\n",
			path:  "gateway.webui.password",
			value: "h",
			want:  "{\n   \"b\": 1,\n   \"a\": 2,\n   \"gateway\": {\n      \"webui\": {\n         \"password\": \"h\"\n      }\n   }\n}\n",
		},
		{
			name:  "the gap between the last two members is copied",
			raw:   "{\n  \"a\": 1,\n\n  \"b\": 2\n}",
			path:  "c",
			value: 3,
			want:  "{\n  \"a\": 1,\n\n  \"b\": 2,\n\n  \"c\": 3\n}",
		},
		{
			name:  "one line, compact",
			raw:   `{"a":1}`,
			path:  "b",
			value: map[string]any{"x": []int{1, 2}},
			want:  `{"a":1,"b":{"x":[1,2]}}`,
		},
		{
			name:  "one line, spaced",
			raw:   `{"a": 1}`,
			path:  "b.c",
			value: []string{"x", "y"},
			want:  `{"a": 1, "b": {"c": ["x", "y"]}}`,
		},
		{
			name:  "an empty file",
			raw:   "",
			path:  "gateway.webui.password",
			value: "h",
			want:  "{\n  \"gateway\": {\n    \"webui\": {\n      \"password\": \"h\"\n    }\n  }\n}\n",
		},
		{
			name:  "an empty top level",
			raw:   "{}\n",
			path:  "a",
			value: true,
			want:  "{\n  \"a\": true\n}\n",
		},
		{
			name:  "an empty object in a spread one is spread",
			raw:   "{\n  \"tools\": {\n    \"exec\": {}\n  }\n}\n",
			path:  "tools.exec.approvedCommands",
			value: []string{"^ls$"},
			want:  "{\n  \"tools\": {\n    \"exec\": {\n      \"approvedCommands\": [\n        \"^ls$\"\n      ]\n    }\n  }\n}\n",
		},
		{
			name:  "an empty object on one line stays on it",
			raw:   "{\n  \"tools\": {\"exec\": { }}\n}\n",
			path:  "tools.exec.approval",
			value: "risky",
			want:  "{\n  \"tools\": {\"exec\": { \"approval\": \"risky\" }}\n}\n",
		},
		{
			name:  "a snake_case key is the key",
			raw:   "{\n  \"tools\": {\n    \"exec\": {\n      \"approved_commands\": [\"^a$\"]\n    }\n  }\n}\n",
			path:  "tools.exec.approvedCommands",
			value: []string{"^a$", "^b$"},
			want:  "{\n  \"tools\": {\n    \"exec\": {\n      \"approved_commands\": [\"^a$\", \"^b$\"]\n    }\n  }\n}\n",
		},
		{
			name:  "the exact spelling wins over another",
			raw:   `{"api_key": "a", "apiKey": "b", "API-KEY": "c"}`,
			path:  "apiKey",
			value: "x",
			want:  `{"api_key": "a", "apiKey": "x", "API-KEY": "c"}`,
		},
		{
			name:  "of two other spellings, the one the loader keeps",
			raw:   `{"api_key": "a", "API-KEY": "c"}`,
			path:  "apiKey",
			value: "x",
			want:  `{"api_key": "a", "API-KEY": "x"}`,
		},
		{
			name:  "the value it has already, in another spelling, is left alone",
			raw:   `{"a": 1.0, "b": "\u00e9\/", "c": [ 1 ]}`,
			path:  "b",
			value: "é/",
			want:  `{"a": 1.0, "b": "\u00e9\/", "c": [ 1 ]}`,
		},
		{
			name:  "a provider's name is taken as written",
			raw:   `{"providers": {"my-proxy": {"api_key": "a"}}}`,
			path:  "providers.my_proxy.apiKey",
			value: "b",
			want:  `{"providers": {"my-proxy": {"api_key": "a"}, "my_proxy": {"apiKey": "b"}}}`,
		},
		{
			name:  "a channel's name as written, its settings in any spelling",
			raw:   `{"channels": {"Feishu": {}, "feishu": {"app_secret": "a"}, "send_progress": true}}`,
			path:  "channels.feishu.appSecret",
			value: "b",
			want:  `{"channels": {"Feishu": {}, "feishu": {"app_secret": "b"}, "send_progress": true}}`,
		},
		{
			name:  "the channels' shared settings in any spelling",
			raw:   `{"channels": {"send_progress": true}}`,
			path:  "channels.sendProgress",
			value: false,
			want:  `{"channels": {"send_progress": false}}`,
		},
		{
			name:  "an agent's name as written, its settings in any spelling",
			raw:   `{"agents": {"Work": {"disabled_skills": []}, "list": [{"name": "x", "disabled_skills": ["a"]}]}}`,
			path:  "agents.list[0].disabledSkills",
			value: []string{},
			want:  `{"agents": {"Work": {"disabled_skills": []}, "list": [{"name": "x", "disabled_skills": []}]}}`,
		},
		{
			name:  "a spread list stays spread",
			raw:   "{\n  \"disabledSkills\": [\n    \"a\"\n  ],\n  \"x\": 1\n}\n",
			path:  "disabledSkills",
			value: []string{"a", "b"},
			want:  "{\n  \"disabledSkills\": [\n    \"a\",\n    \"b\"\n  ],\n  \"x\": 1\n}\n",
		},
		{
			name:  "an empty list in a spread object is spread",
			raw:   "{\n  \"disabledSkills\": [],\n  \"x\": 1\n}\n",
			path:  "disabledSkills",
			value: []string{"a"},
			want:  "{\n  \"disabledSkills\": [\n    \"a\"\n  ],\n  \"x\": 1\n}\n",
		},
		{
			name:  "a list emptied",
			raw:   "{\n  \"disabledSkills\": [\n    \"a\"\n  ]\n}\n",
			path:  "disabledSkills",
			value: []string{},
			want:  "{\n  \"disabledSkills\": []\n}\n",
		},
		{
			name:  "strings with brackets, quotes and escapes before the key",
			raw:   `{"a": "}\"]{,:", "b\"": {"c": "\\"}, "\u0064": 1, "e": [1, {"f": null}], "g": 0}`,
			path:  "d",
			value: 2,
			want:  `{"a": "}\"]{,:", "b\"": {"c": "\\"}, "\u0064": 2, "e": [1, {"f": null}], "g": 0}`,
		},
		{
			name:  "CRLF line breaks",
			raw:   "{\r\n  \"a\": 1\r\n}\r\n",
			path:  "b.c",
			value: 2,
			want:  "{\r\n  \"a\": 1,\r\n  \"b\": {\r\n    \"c\": 2\r\n  }\r\n}\r\n",
		},
		{
			name:  "a null on the way becomes an object",
			raw:   "{\n  \"gateway\": {\n    \"webui\": null\n  }\n}\n",
			path:  "gateway.webui.password",
			value: "h",
			want:  "{\n  \"gateway\": {\n    \"webui\": {\n      \"password\": \"h\"\n    }\n  }\n}\n",
		},
		{
			name:  "an array element by index",
			raw:   "{\n  \"agents\": {\n    \"list\": [\n      {\"name\": \"a\"},\n      {\n        \"name\": \"b\"\n      }\n    ]\n  }\n}\n",
			path:  "agents.list[1].disabledSkills",
			value: []string{"x"},
			want: "{\n  \"agents\": {\n    \"list\": [\n      {\"name\": \"a\"},\n      {\n        \"name\": \"b\",\n" +
				"        \"disabledSkills\": [\n          \"x\"\n        ]\n      }\n    ]\n  }\n}\n",
		},
		{
			name:  "a byte order mark is kept",
			raw:   "\xef\xbb\xbf{\"a\": 1}",
			path:  "a",
			value: 2,
			want:  "\xef\xbb\xbf{\"a\": 2}",
		},
		{
			name:  "of duplicate keys the last, which is the one read",
			raw:   `{"a": 1, "a": 2}`,
			path:  "a",
			value: 3,
			want:  `{"a": 1, "a": 3}`,
		},
		{
			name:  "a member's value that starts on the next line",
			raw:   "{\n  \"a\":\n    {\"b\": 1}\n}",
			path:  "a",
			value: map[string]int{"b": 2},
			want:  "{\n  \"a\":\n    {\"b\": 2}\n}",
		},
		{
			name:  "a member added after one whose value starts on the next line",
			raw:   "{\n  \"a\":\n    1\n}",
			path:  "b",
			value: map[string]int{"c": 2},
			want:  "{\n  \"a\":\n    1,\n  \"b\":\n    {\n      \"c\": 2\n    }\n}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PatchJSON([]byte(tt.raw), tt.path, tt.value)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got\n%s\nwant\n%s\ndiff (-want +got):\n%s", got, tt.want, cmp.Diff(tt.want, string(got)))
			}
			checkPatch(t, []byte(tt.raw), tt.path, tt.value, got)
			// The same value again changes nothing.
			again, err := PatchJSON(got, tt.path, tt.value)
			if err != nil || !bytes.Equal(again, got) {
				t.Errorf("patched again: %v\n%s", err, again)
			}
		})
	}
}

func TestPatchJSONRefuses(t *testing.T) {
	tests := []struct{ name, raw, path, want string }{
		{"a comment", "{\n  // mine\n  \"a\": 1\n}", "a", "invalid JSON at line 2, column 3"},
		{"a trailing comma", `{"a": 1,}`, "a", "invalid JSON"},
		{"an array at the top", `[1]`, "a", "want a JSON object at the top level"},
		{"a string on the way", `{"tools": {"exec": "x"}}`, "tools.exec.approval", "tools.exec is not an object in the file"},
		{"an index past the end", `{"agents": {"list": []}}`, "agents.list[0].skills", "agents.list[0] is not in the file"},
		{"an index into an object", `{"agents": {"list": {}}}`, "agents.list[0].skills", "agents.list is not an array in the file"},
		{"an index under a missing key", `{}`, "agents.list[0].skills", "agents.list[0] is not in the file"},
		{"a bad index", `{}`, "agents.list[x]", "want [index] after agents.list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PatchJSON([]byte(tt.raw), tt.path, 1)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %q, %v; want an error with %q", got, err, tt.want)
			}
		})
	}
}

func TestLookupJSON(t *testing.T) {
	raw := []byte(`{"tools": {"exec": {"approved_commands": ["^a$"]}}, "agents": {"list": [{"name": "x"}]}}`)
	for path, want := range map[string]string{
		"tools.exec.approvedCommands": `["^a$"]`,
		"agents.list[0].name":         `"x"`,
		"tools.exec.approval":         "",
		"gateway.webui":               "",
	} {
		got, found, err := LookupJSON(raw, path)
		if err != nil || found != (want != "") || string(got) != want {
			t.Errorf("LookupJSON(%s) = %s, %v, %v; want %s", path, got, found, err, want)
		}
	}
}

// FuzzPatchJSON: whatever the layout, the patched file parses to the old
// tree with just that value set (SetPath on the key the loader would use),
// and fails where SetPath does. The seeds are in testdata/fuzz.
func FuzzPatchJSON(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte, path string, value []byte) {
		var v any
		if json.Unmarshal(value, &v) != nil {
			return
		}
		got, err := PatchJSON(raw, path, v)
		if strings.ContainsAny(path, "[]") || !utf8.ValidString(path) {
			return // indices are not SetPath's; a key is written as valid UTF-8
		}
		tree, perr := parseJSON(bytes.TrimPrefix(raw, bom))
		if perr != nil {
			if err == nil {
				t.Fatalf("patched a file that does not parse (%v):\n%s", perr, got)
			}
			return
		}
		want := resolvePath(tree, path)
		if serr := SetPath(tree, want, v); (serr != nil) != (err != nil) {
			t.Fatalf("PatchJSON: %v; SetPath: %v", err, serr)
		}
		if err != nil {
			return
		}
		checkPatch(t, raw, path, v, got)
		if again, err := PatchJSON(got, path, v); err != nil || !bytes.Equal(again, got) {
			t.Fatalf("the same value again: %v\n%q\n%q", err, got, again)
		}
	})
}

// checkPatch checks that got parses to raw's tree with value set at path.
func checkPatch(t *testing.T, raw []byte, path string, value any, got []byte) {
	t.Helper()
	if strings.ContainsAny(path, "[]") {
		return
	}
	tree, err := parseJSON(bytes.TrimPrefix(raw, bom))
	if err != nil {
		t.Fatal(err)
	}
	if err := SetPath(tree, resolvePath(tree, path), roundTrip(t, value)); err != nil {
		t.Fatal(err)
	}
	after, err := parseJSON(bytes.TrimPrefix(got, bom))
	if err != nil {
		t.Fatalf("the patched file does not parse: %v\n%s", err, got)
	}
	if diff := cmp.Diff(tree, after); diff != "" {
		t.Fatalf("patched tree (-want +got):\n%s\nfile:\n%s", diff, got)
	}
}

// resolvePath spells path's keys as the file does, where it has them: the
// exact key, else, for a setting's name, the first in sorted order of
// those that fold to it.
func resolvePath(tree map[string]any, path string) string {
	segs := strings.Split(path, ".")
	parsed, err := parsePatchPath(path)
	if err != nil {
		return path
	}
	folds := keyFolds(parsed)
	var cur any = tree
	for i, s := range segs {
		m, ok := cur.(map[string]any)
		if !ok {
			break
		}
		if _, ok := m[s]; !ok {
			var alts []string
			for k := range m {
				if folds[i] && normKey(k) == normKey(s) {
					alts = append(alts, k)
				}
			}
			if len(alts) == 0 {
				break
			}
			segs[i] = slices.Min(alts)
		}
		cur = m[segs[i]]
	}
	return strings.Join(segs, ".")
}

func roundTrip(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
