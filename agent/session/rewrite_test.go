package session

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nanobot-go/nanobot/providers"
)

func TestRewrite(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{})
	ctx := context.Background()
	s := ts.load(t, "k:1")
	ts.append(t, s, u("one"), a("two"), u("three"), a("four"))
	if err := ts.SetMetadata(ctx, s, "lang", "de"); err != nil {
		t.Fatal(err)
	}
	keep := []providers.Message{s.Messages[2], s.Messages[3], u("five")}
	if err := ts.Rewrite(ctx, s, keep, 1); err != nil {
		t.Fatal(err)
	}
	if s.LastConsolidated != 1 || len(s.Messages) != 3 || s.Messages[2].Timestamp == "" {
		t.Errorf("after Rewrite: cursor %d, %d messages, new stamp %q", s.LastConsolidated, len(s.Messages), s.Messages[2].Timestamp)
	}
	if keep[2].Timestamp != "" {
		t.Errorf("Rewrite stamped the caller's message")
	}
	checkFileValid(t, ts.file("k:1"))
	r := ts.reopen(t).load(t, "k:1")
	if diff := cmp.Diff(s.Messages, r.Messages, cmpMsgs); diff != "" {
		t.Errorf("reloaded after Rewrite (-want +got):\n%s", diff)
	}
	if r.LastConsolidated != 1 || r.Metadata["lang"] != "de" {
		t.Errorf("reloaded cursor %d, metadata %v; want 1, lang=de", r.LastConsolidated, r.Metadata)
	}
}

func TestRewriteRejectsAndFailsCleanly(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{})
	ctx := context.Background()
	s := ts.load(t, "k:1")
	ts.append(t, s, u("one"), a("two"))
	before, _ := os.ReadFile(ts.file("k:1"))
	want := append([]providers.Message(nil), s.Messages...)

	tests := []struct {
		name    string
		msgs    []providers.Message
		cursor  int
		wrap    func(io.Writer) io.Writer
		wantErr error
	}{
		{"cursor past end", []providers.Message{u("x")}, 2, nil, ErrInvalidCursor},
		{"negative cursor", []providers.Message{u("x")}, -1, nil, ErrInvalidCursor},
		{"message without role", []providers.Message{u("x"), {Content: "who?"}}, 0, nil, ErrInvalidMessage},
		{"disk full midway", []providers.Message{u("x"), a("y")}, 0,
			func(w io.Writer) io.Writer { return &failingWriter{w: w, n: 30} }, errDiskFull},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts.wrapRewrite = tt.wrap
			defer func() { ts.wrapRewrite = nil }()
			if err := ts.Rewrite(ctx, s, tt.msgs, tt.cursor); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Rewrite err = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(want, s.Messages, cmpMsgs); diff != "" || s.LastConsolidated != 0 {
				t.Errorf("failed Rewrite changed the session (cursor %d):\n%s", s.LastConsolidated, diff)
			}
			if after, _ := os.ReadFile(ts.file("k:1")); !cmp.Equal(before, after) {
				t.Errorf("failed Rewrite changed the file:\nbefore %q\nafter  %q", before, after)
			}
			if tmp := tempFiles(t, ts.dir); len(tmp) > 0 {
				t.Errorf("temporary files left: %q", tmp)
			}
		})
	}
	// The session is still writable after the failures.
	ts.append(t, s, u("three"))
	if got := len(ts.reopen(t).load(t, "k:1").Messages); got != 3 {
		t.Errorf("%d messages on disk, want 3", got)
	}
}

func TestAppendRejectsMessageWithoutRole(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{})
	s := ts.load(t, "k:1")
	ts.append(t, s, u("one"))
	err := ts.Append(context.Background(), s, a("fine"), providers.Message{Content: "no role"})
	if !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("Append err = %v, want ErrInvalidMessage", err)
	}
	if len(s.Messages) != 1 {
		t.Errorf("rejected Append left %d messages in memory, want 1", len(s.Messages))
	}
	if got := len(ts.reopen(t).load(t, "k:1").Messages); got != 1 {
		t.Errorf("rejected Append left %d messages on disk, want 1", got)
	}
}

func TestAppendToEmptyFileWritesHeader(t *testing.T) {
	for name, content := range map[string]string{"empty": "", "torn only": `{"role":"us`} {
		t.Run(name, func(t *testing.T) {
			ts := newTestStore(t, "", FileStoreOptions{})
			os.MkdirAll(ts.dir, 0o700)
			os.WriteFile(ts.file("k:1"), []byte(content), 0o600)
			ts.append(t, ts.load(t, "k:1"), u("one"))
			checkFileValid(t, ts.file("k:1"))
		})
	}
}
