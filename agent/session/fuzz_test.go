package session

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nanobot-go/nanobot/providers"
)

// FuzzLoadJSONL treats arbitrary bytes as a session file: loading never
// fails or panics, and after an append and a reload everything that loaded
// is still there, followed by the new message.
func FuzzLoadJSONL(f *testing.F) {
	f.Add([]byte(metaHeader + `{"role":"user","content":"one"}` + "\n"))
	f.Add([]byte(metaHeader + `{"role":"user","content":"one"}` + "\n" + `{"role":"assistant","con`))
	f.Add([]byte(metaHeader + "garbage\n" + `{"role":"tool","tool_call_id":"1","content":"x"}`))
	f.Add([]byte(`{"role":"user","content":[{"type":"text","text":"hi"}]}` + "\n" + `{"_type":"metadata","last_consolidated":1,"metadata":{"a":[1,2]}}` + "\n  "))
	f.Add([]byte(`{"_type":"metadata","last_consolidated":99}` + "\r\n\r\n"))
	f.Add([]byte{})
	f.Add([]byte("\n\n\xff\x00{"))
	ctx := context.Background()
	const key = "fuzz:1"
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, encodeKey(key)+fileExt), data, 0o600); err != nil {
			t.Fatal(err)
		}
		opts := FileStoreOptions{NoSync: true, Logger: slog.New(slog.DiscardHandler)}
		st, err := NewFileStore(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		s, err := st.Load(ctx, key)
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if s.LastConsolidated < 0 || s.LastConsolidated > len(s.Messages) {
			t.Fatalf("cursor %d outside [0, %d]", s.LastConsolidated, len(s.Messages))
		}
		s.History(0)
		loaded := append([]providers.Message(nil), s.Messages...)
		cursor, md := s.LastConsolidated, s.Metadata
		if err := st.Append(ctx, s, providers.Message{Role: providers.RoleUser, Content: "after"}); err != nil {
			t.Fatalf("Append: %v", err)
		}
		st2, err := NewFileStore(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		r, err := st2.Load(ctx, key)
		if err != nil {
			t.Fatalf("reload: %v", err)
		}
		if len(r.Messages) != len(loaded)+1 {
			t.Fatalf("reloaded %d messages, want %d", len(r.Messages), len(loaded)+1)
		}
		if diff := cmp.Diff(loaded, r.Messages[:len(loaded)], cmpMsgs); diff != "" {
			t.Fatalf("messages changed across append and reload (-want +got):\n%s", diff)
		}
		if got := r.Messages[len(loaded)].Content; got != "after" {
			t.Fatalf("last message = %q, want the appended one", got)
		}
		if r.LastConsolidated != cursor {
			t.Fatalf("cursor %d after reload, want %d", r.LastConsolidated, cursor)
		}
		if diff := cmp.Diff(md, r.Metadata, cmpMsgs); diff != "" {
			t.Fatalf("metadata changed (-want +got):\n%s", diff)
		}
	})
}
