package session

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"

	"github.com/nanobot-go/nanobot/gateway/natsbus/natstest"
	"github.com/nanobot-go/nanobot/providers"
)

// storeImpl opens stores on one backing storage: every call of open is a
// restart (a new process, or another worker) on the same data.
type storeImpl struct {
	name string
	open func(t *testing.T) func() Store
}

func storeImpls() []storeImpl {
	return []storeImpl{
		{"file", func(t *testing.T) func() Store {
			dir := t.TempDir()
			return func() Store {
				s, err := NewFileStore(dir, FileStoreOptions{NoSync: true})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
		}},
		{"nats-kv", func(t *testing.T) func() Store {
			srv := natstest.Start(t)
			return func() Store {
				nc, err := nats.Connect(srv.URL())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(nc.Close)
				js, err := jetstreamNew(nc)
				if err != nil {
					t.Fatal(err)
				}
				// Small chunks so multi-chunk sessions are exercised.
				s, err := NewKVStore(context.Background(), js, KVStoreOptions{ChunkBytes: 200})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
		}},
	}
}

// TestStoreSuite runs the same behaviour tests against every Store.
func TestStoreSuite(t *testing.T) {
	for _, impl := range storeImpls() {
		t.Run(impl.name, func(t *testing.T) {
			t.Run("RoundTrip", func(t *testing.T) { suiteRoundTrip(t, impl.open(t)) })
			t.Run("CursorMetadata", func(t *testing.T) { suiteCursorMetadata(t, impl.open(t)) })
			t.Run("RewriteArchiveList", func(t *testing.T) { suiteRewriteArchiveList(t, impl.open(t)) })
			t.Run("Errors", func(t *testing.T) { suiteErrors(t, impl.open(t)) })
			t.Run("Concurrent", func(t *testing.T) { suiteConcurrent(t, impl.open(t)) })
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func contents(msgs []providers.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, string(m.Role)+":"+m.Content)
	}
	return out
}

func suiteRoundTrip(t *testing.T, open func() Store) {
	ctx := context.Background()
	st := open()
	s, err := st.Load(ctx, "telegram:42")
	must(t, err)
	if len(s.Messages) != 0 || s.Key != "telegram:42" {
		t.Fatalf("new session not empty: %+v", s)
	}
	must(t, st.Append(ctx, s, u("hello"), a("hi there")))
	must(t, st.Append(ctx, s, u("how are you?"), a("fine, with a long answer that spills over chunk limits of small stores")))
	for _, m := range s.Messages {
		if m.Timestamp == "" {
			t.Errorf("message %q not stamped", m.Content)
		}
	}
	want := contents(s.Messages)
	again, err := open().Load(ctx, "telegram:42")
	must(t, err)
	if d := cmp.Diff(want, contents(again.Messages)); d != "" {
		t.Errorf("after reopen (-want +got):\n%s", d)
	}
	if d := cmp.Diff(s.History(0), again.History(0), cmpMsgs); d != "" {
		t.Errorf("history differs after reopen:\n%s", d)
	}
}

func suiteCursorMetadata(t *testing.T, open func() Store) {
	ctx := context.Background()
	st := open()
	s, err := st.Load(ctx, "k")
	must(t, err)
	must(t, st.Append(ctx, s, u("1"), a("2"), u("3"), a("4")))
	must(t, st.SetCursor(ctx, s, 2))
	must(t, st.SetMetadata(ctx, s, "lang", "de"))
	must(t, st.SetMetadata(ctx, s, "n", 3))
	must(t, st.SetMetadata(ctx, s, "n", nil))
	if err := st.SetCursor(ctx, s, 9); !errors.Is(err, ErrInvalidCursor) {
		t.Errorf("cursor 9 of 4: %v", err)
	}
	r, err := open().Load(ctx, "k")
	must(t, err)
	if r.LastConsolidated != 2 || r.Metadata["lang"] != "de" || r.Metadata["n"] != nil || len(r.Messages) != 4 {
		t.Errorf("reloaded cursor %d metadata %v messages %d", r.LastConsolidated, r.Metadata, len(r.Messages))
	}
	if got := contents(r.History(0)); len(got) != 2 || got[0] != "user:3" {
		t.Errorf("history after cursor = %v", got)
	}
}

func suiteRewriteArchiveList(t *testing.T, open func() Store) {
	ctx := context.Background()
	st := open()
	s, err := st.Load(ctx, "a")
	must(t, err)
	must(t, st.Append(ctx, s, u("old"), a("reply")))
	must(t, st.Rewrite(ctx, s, []providers.Message{u("summary"), a("ok"), u("next")}, 1))
	b, err := st.Load(ctx, "b")
	must(t, err)
	must(t, st.Append(ctx, b, u("b1")))
	must(t, st.Archive(ctx, b))
	must(t, st.Append(ctx, b, u("fresh")))

	re := open()
	ra, err := re.Load(ctx, "a")
	must(t, err)
	if d := cmp.Diff([]string{"user:summary", "assistant:ok", "user:next"}, contents(ra.Messages)); d != "" || ra.LastConsolidated != 1 {
		t.Errorf("rewrite not persisted (cursor %d):\n%s", ra.LastConsolidated, d)
	}
	rb, err := re.Load(ctx, "b")
	must(t, err)
	if d := cmp.Diff([]string{"user:fresh"}, contents(rb.Messages)); d != "" {
		t.Errorf("archive did not start afresh:\n%s", d)
	}
	infos, err := re.List(ctx)
	must(t, err)
	var keys []string
	for _, i := range infos {
		keys = append(keys, i.Key)
	}
	sort.Strings(keys)
	if d := cmp.Diff([]string{"a", "b"}, keys); d != "" {
		t.Errorf("List (-want +got):\n%s", d)
	}
}

func suiteErrors(t *testing.T, open func() Store) {
	ctx := context.Background()
	st, other := open(), open()
	if _, err := st.Load(ctx, ""); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("empty key: %v", err)
	}
	s, err := other.Load(ctx, "x")
	must(t, err)
	if err := st.Append(ctx, s, u("hi")); !errors.Is(err, ErrForeignSession) {
		t.Errorf("foreign session: %v", err)
	}
	mine, err := st.Load(ctx, "x")
	must(t, err)
	if err := st.Append(ctx, mine, providers.Message{Content: "no role"}); !errors.Is(err, ErrInvalidMessage) {
		t.Errorf("message without role: %v", err)
	}
	if len(mine.Messages) != 0 {
		t.Error("failed append changed the session")
	}
}

func suiteConcurrent(t *testing.T, open func() Store) {
	ctx := context.Background()
	st := open()
	var wg sync.WaitGroup
	for k := range 4 {
		wg.Go(func() {
			key := fmt.Sprint("chat", k)
			s, err := st.Load(ctx, key)
			if err != nil {
				t.Error(err)
				return
			}
			for i := range 10 {
				if err := st.Append(ctx, s, u(fmt.Sprint(i))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	re := open()
	for k := range 4 {
		s, err := re.Load(ctx, fmt.Sprint("chat", k))
		must(t, err)
		if len(s.Messages) != 10 || s.Messages[9].Content != "9" {
			t.Errorf("chat%d: %v", k, contents(s.Messages))
		}
	}
}
