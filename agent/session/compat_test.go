package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nanobot-go/nanobot/providers"
)

func TestList(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{NoSync: true})
	ctx := context.Background()
	long := strings.Repeat("長", 200)
	keys := []string{"telegram:1", "slack:C1:thread:9", long}
	for _, k := range keys {
		ts.append(t, ts.load(t, k), u("hi"), a("hello"))
	}
	os.WriteFile(filepath.Join(ts.dir, "README.txt"), []byte("not a session"), 0o600)
	list := func(st testStore) map[string]int {
		infos, err := st.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, in := range infos {
			if in.UpdatedAt.IsZero() {
				t.Errorf("%q: zero UpdatedAt", in.Key)
			}
			got[in.Key] = in.Messages
		}
		return got
	}
	want := map[string]int{"telegram:1": 2, "slack:C1:thread:9": 2, long: 2}
	if diff := cmp.Diff(want, list(ts)); diff != "" {
		t.Errorf("List with cached sessions (-want +got):\n%s", diff)
	}
	want = map[string]int{"telegram:1": -1, "slack:C1:thread:9": -1, long: -1}
	if diff := cmp.Diff(want, list(ts.reopen(t))); diff != "" {
		t.Errorf("List after restart (-want +got):\n%s", diff)
	}
}

func TestPythonCompat(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{})
	os.MkdirAll(ts.dir, 0o700)
	// As the Python nanobot writes it: isoformat times without a zone, a null
	// content on a tool-calling assistant message, extra fields.
	py := `{"_type": "metadata", "key": "telegram:12345", "created_at": "2026-02-01T10:00:00.123456", "updated_at": "2026-02-01T10:05:00.654321", "metadata": {"lang": "en"}, "last_consolidated": 2}
{"role": "user", "content": "hello", "timestamp": "2026-02-01T10:00:00.200000"}
{"role": "assistant", "content": "hi!", "timestamp": "2026-02-01T10:00:01.000000"}
{"role": "user", "content": "list files", "timestamp": "2026-02-01T10:01:00.000000"}
{"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "exec", "arguments": "{\"command\": \"ls\"}"}}], "timestamp": "2026-02-01T10:01:01.000000"}
{"role": "tool", "tool_call_id": "call_1", "name": "exec", "content": "a.txt\nb.txt", "timestamp": "2026-02-01T10:01:02.000000"}
{"role": "assistant", "content": "Two files.", "tools_used": ["exec"], "timestamp": "2026-02-01T10:01:03.000000"}
`
	legacy := filepath.Join(ts.dir, "telegram_12345.jsonl")
	if err := os.WriteFile(legacy, []byte(py), 0o644); err != nil {
		t.Fatal(err)
	}
	infos, err := ts.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Key != "telegram:12345" {
		t.Errorf("List of a python folder = %+v, want key telegram:12345", infos)
	}
	s := ts.load(t, "telegram:12345")
	if len(s.Messages) != 6 || s.LastConsolidated != 2 || s.Metadata["lang"] != "en" {
		t.Fatalf("loaded %d messages, cursor %d, metadata %v; want 6, 2, lang=en", len(s.Messages), s.LastConsolidated, s.Metadata)
	}
	want := []providers.Message{
		{Role: "user", Content: "list files", Timestamp: "2026-02-01T10:01:00.000000"},
		{Role: "assistant", ToolCalls: []providers.ToolCall{{ID: "call_1", Type: "function",
			Function: providers.FunctionCall{Name: "exec", Arguments: `{"command": "ls"}`}}}, Timestamp: "2026-02-01T10:01:01.000000"},
		{Role: "tool", ToolCallID: "call_1", Name: "exec", Content: "a.txt\nb.txt", Timestamp: "2026-02-01T10:01:02.000000"},
		{Role: "assistant", Content: "Two files.", Timestamp: "2026-02-01T10:01:03.000000"},
	}
	if diff := cmp.Diff(want, s.History(0), cmpMsgs); diff != "" {
		t.Errorf("History of python session (-want +got):\n%s", diff)
	}
	if s.CreatedAt.Year() != 2026 || s.CreatedAt.Nanosecond() != 123456000 {
		t.Errorf("created_at parsed as %v", s.CreatedAt)
	}
	if _, err := os.Stat(legacy); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("legacy file still present after adoption (stat err %v)", err)
	}
	ts.append(t, s, u("more"))
	if r := ts.reopen(t).load(t, "telegram:12345"); len(r.Messages) != 7 {
		t.Errorf("after adoption and append: %d messages, want 7", len(r.Messages))
	}
}

func TestLegacyFileOfAnotherKeyIgnored(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{})
	os.MkdirAll(ts.dir, 0o700)
	other := `{"_type":"metadata","key":"telegram_12345","last_consolidated":0,"metadata":{}}` + "\n" + `{"role":"user","content":"x"}` + "\n"
	os.WriteFile(filepath.Join(ts.dir, "telegram_12345.jsonl"), []byte(other), 0o600)
	if s := ts.load(t, "telegram:12345"); len(s.Messages) != 0 {
		t.Errorf("adopted the file of key telegram_12345 for telegram:12345")
	}
	if s := ts.load(t, "telegram_12345"); len(s.Messages) != 1 {
		t.Errorf("key telegram_12345 lost its own file")
	}
}
