package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nanobot-go/nanobot/providers"
)

func TestRoundTrip(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{})
	ctx := context.Background()
	s := ts.load(t, "telegram:42")
	if len(s.Messages) != 0 || s.Key != "telegram:42" || s.Metadata == nil {
		t.Fatalf("new session = %+v, want empty with key and metadata map", s)
	}
	if _, err := os.Stat(ts.file("telegram:42")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load created a file (stat err %v); want none until the first write", err)
	}
	withExtras := ac("", "c1")
	withExtras.ReasoningContent = "thinking out loud"
	withExtras.ThinkingBlocks = []providers.ThinkingBlock{{Type: "thinking", Thinking: "t", Signature: "sig"}}
	turn := []providers.Message{
		{Role: providers.RoleUser, Parts: []providers.ContentPart{providers.TextPart("what is this?"), providers.ImagePart("data:image/png;base64,AAAA")}},
		withExtras, tr("c1"), a("a cat <3 & \"quotes\"\nnewline"),
	}
	ts.append(t, s, turn...)
	ts.append(t, s, u("second"), providers.Message{Role: providers.RoleAssistant, Content: "kept stamp", Timestamp: "2020-01-01T00:00:00Z"})
	for i, m := range s.Messages {
		if m.Timestamp == "" {
			t.Errorf("message %d has no timestamp", i)
		}
	}
	if turn[0].Timestamp != "" {
		t.Errorf("Append stamped the caller's message")
	}
	if got := s.Messages[5].Timestamp; got != "2020-01-01T00:00:00Z" {
		t.Errorf("existing timestamp replaced: %q", got)
	}
	if err := ts.SetMetadata(ctx, s, "model", "gpt-x"); err != nil {
		t.Fatal(err)
	}

	r := ts.reopen(t).load(t, "telegram:42")
	if diff := cmp.Diff(s.Messages, r.Messages, cmpMsgs); diff != "" {
		t.Errorf("reloaded messages differ (-want +got):\n%s", diff)
	}
	if !r.UpdatedAt.Equal(s.UpdatedAt) || !r.CreatedAt.Equal(s.CreatedAt) {
		t.Errorf("times: got created %v updated %v, want %v %v", r.CreatedAt, r.UpdatedAt, s.CreatedAt, s.UpdatedAt)
	}
	if got := r.Metadata["model"]; got != "gpt-x" {
		t.Errorf("metadata model = %v, want gpt-x", got)
	}
	checkFileValid(t, ts.file("telegram:42"))

	fi, err := os.Stat(ts.file("telegram:42"))
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("file mode = %o, want 600", perm)
	}
	di, err := os.Stat(ts.dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := di.Mode().Perm(); perm != 0o700 {
		t.Errorf("folder mode = %o, want 700", perm)
	}
	first, err := readMetaLine(ts.file("telegram:42"))
	if err != nil {
		t.Fatalf("first line: %v", err)
	}
	if first.Key != "telegram:42" {
		t.Errorf("metadata key = %q, want telegram:42", first.Key)
	}
}

func TestAppendWritesOnlyNewLines(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{NoSync: true})
	s := ts.load(t, "k:1")
	ts.append(t, s, u("one"))
	before, _ := os.ReadFile(ts.file("k:1"))
	ts.append(t, s, a("two"))
	after, _ := os.ReadFile(ts.file("k:1"))
	if !strings.HasPrefix(string(after), string(before)) {
		t.Fatalf("append rewrote existing bytes:\nbefore %q\nafter  %q", before, after)
	}
	var m providers.Message
	if err := json.Unmarshal(after[len(before):], &m); err != nil || m.Content != "two" {
		t.Errorf("appended part = %q (%v), want the one new message", after[len(before):], err)
	}
}

func TestCursorPersistence(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{CompactAfter: 4})
	ctx := context.Background()
	s := ts.load(t, "k:1")
	for i := range 10 {
		ts.append(t, s, u(fmt.Sprint("q", i)), a(fmt.Sprint("r", i)))
	}
	for _, c := range []int{2, 4, 6, 8, 10, 12} { // more updates than CompactAfter
		if err := ts.SetCursor(ctx, s, c); err != nil {
			t.Fatalf("SetCursor(%d): %v", c, err)
		}
		r := ts.reopen(t).load(t, "k:1")
		if r.LastConsolidated != c {
			t.Errorf("after SetCursor(%d) and reload: cursor %d", c, r.LastConsolidated)
		}
		if diff := cmp.Diff(s.Messages, r.Messages, cmpMsgs); diff != "" {
			t.Fatalf("messages changed by cursor update:\n%s", diff)
		}
		checkFileValid(t, ts.file("k:1"))
	}
	if s.file.metaLines > 4 {
		t.Errorf("%d metadata lines; want compaction at 4", s.file.metaLines)
	}
	if err := ts.SetCursor(ctx, s, 21); err == nil {
		t.Errorf("SetCursor past the end: want error")
	}
	if err := ts.SetCursor(ctx, s, -1); err == nil {
		t.Errorf("SetCursor(-1): want error")
	}
	if err := ts.SetMetadata(ctx, s, "n", 3); err != nil {
		t.Fatal(err)
	}
	if err := ts.SetMetadata(ctx, s, "bad", func() {}); err == nil {
		t.Errorf("SetMetadata with a func value: want error")
	}
	r := ts.reopen(t).load(t, "k:1")
	if diff := cmp.Diff(s.Metadata, r.Metadata); diff != "" {
		t.Errorf("metadata after reload (-want +got):\n%s", diff)
	}
	if err := ts.SetMetadata(ctx, s, "n", nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := ts.reopen(t).load(t, "k:1").Metadata["n"]; ok {
		t.Errorf("SetMetadata(nil) did not delete the key")
	}
}

const metaHeader = `{"_type":"metadata","key":"k:1","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","last_consolidated":1,"metadata":{}}` + "\n"

func TestTornLastLine(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{})
	content := metaHeader +
		`{"role":"user","content":"one"}` + "\n" +
		`{"role":"assistant","content":"two"}` + "\n" +
		`{"role":"user","content":"thr`
	if err := os.MkdirAll(ts.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ts.file("k:1"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	s := ts.load(t, "k:1")
	if got := len(s.Messages); got != 2 {
		t.Fatalf("loaded %d messages, want the 2 complete ones", got)
	}
	if s.LastConsolidated != 1 {
		t.Errorf("cursor = %d, want 1", s.LastConsolidated)
	}
	if !strings.Contains(ts.logs.String(), "torn last line") {
		t.Errorf("no warning about the torn line; logs:\n%s", ts.logs)
	}
	ts.append(t, s, u("three"))
	checkFileValid(t, ts.file("k:1"))
	r := ts.reopen(t)
	got := r.load(t, "k:1")
	var texts []string
	for _, m := range got.Messages {
		texts = append(texts, m.Content)
	}
	if want := []string{"one", "two", "three"}; !cmp.Equal(want, texts) {
		t.Errorf("after reload: %q, want %q", texts, want)
	}
	if l := r.logs.String(); l != "" {
		t.Errorf("reloading the repaired file logged:\n%s", l)
	}
}

func TestUnterminatedCompleteLastLine(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{})
	os.MkdirAll(ts.dir, 0o700)
	os.WriteFile(ts.file("k:1"), []byte(metaHeader+`{"role":"user","content":"one"}`), 0o600)
	s := ts.load(t, "k:1")
	ts.append(t, s, a("two"))
	checkFileValid(t, ts.file("k:1"))
	if got := len(ts.reopen(t).load(t, "k:1").Messages); got != 2 {
		t.Errorf("reloaded %d messages, want 2", got)
	}
}

func TestCorruptMiddleLine(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{})
	content := metaHeader +
		`{"role":"user","content":"one"}` + "\n" +
		`{"role":"assistant","content":` + "\n" +
		"\x00\xff garbage\n" +
		`{"content":"no role"}` + "\n" +
		"\n" +
		`{"role":"assistant","content":"two"}` + "\n"
	os.MkdirAll(ts.dir, 0o700)
	os.WriteFile(ts.file("k:1"), []byte(content), 0o600)
	s := ts.load(t, "k:1")
	var texts []string
	for _, m := range s.Messages {
		texts = append(texts, m.Content)
	}
	if want := []string{"one", "two"}; !cmp.Equal(want, texts) {
		t.Errorf("loaded %q, want %q", texts, want)
	}
	if n := strings.Count(ts.logs.String(), "skipping corrupt line"); n != 3 {
		t.Errorf("%d corrupt-line warnings, want 3; logs:\n%s", n, ts.logs)
	}
}

// failingWriter fails after n bytes, like a full disk mid-rewrite.
type failingWriter struct {
	w io.Writer
	n int
}

var errDiskFull = errors.New("disk full (simulated)")

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		n, _ := f.w.Write(p[:f.n])
		f.n = 0
		return n, errDiskFull
	}
	f.n -= len(p)
	return f.w.Write(p)
}

func TestAtomicRewrite(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{CompactAfter: 1})
	ctx := context.Background()
	s := ts.load(t, "k:1")
	ts.append(t, s, u("one"), a("two"), u("three"))
	before, err := os.ReadFile(ts.file("k:1"))
	if err != nil {
		t.Fatal(err)
	}

	ts.wrapRewrite = func(w io.Writer) io.Writer { return &failingWriter{w: w, n: 20} }
	if err := ts.SetCursor(ctx, s, 2); !errors.Is(err, errDiskFull) {
		t.Fatalf("SetCursor with failing rewrite: err %v, want %v", err, errDiskFull)
	}
	after, _ := os.ReadFile(ts.file("k:1"))
	if !cmp.Equal(before, after) {
		t.Errorf("failed rewrite changed the file:\nbefore %q\nafter  %q", before, after)
	}
	if s.LastConsolidated != 0 {
		t.Errorf("failed SetCursor moved the cursor to %d", s.LastConsolidated)
	}
	if tmp := tempFiles(t, ts.dir); len(tmp) > 0 {
		t.Errorf("temporary files left: %q", tmp)
	}

	ts.wrapRewrite = nil
	if err := ts.SetCursor(ctx, s, 2); err != nil {
		t.Fatal(err)
	}
	if tmp := tempFiles(t, ts.dir); len(tmp) > 0 {
		t.Errorf("temporary files left: %q", tmp)
	}
	checkFileValid(t, ts.file("k:1"))
	if r := ts.reopen(t).load(t, "k:1"); r.LastConsolidated != 2 || len(r.Messages) != 3 {
		t.Errorf("after rewrite: cursor %d, %d messages; want 2, 3", r.LastConsolidated, len(r.Messages))
	}
}

func TestStaleTempFilesRemoved(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, ".k%3A1.jsonl.tmp-123")
	if err := os.WriteFile(stale, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	newTestStore(t, dir, FileStoreOptions{})
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temporary file still there (stat err %v)", err)
	}
}

func TestArchive(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{})
	ctx := context.Background()
	s := ts.load(t, "k:1")
	ts.append(t, s, u("old"), a("conversation"))
	if err := ts.SetMetadata(ctx, s, "x", true); err != nil {
		t.Fatal(err)
	}
	if err := ts.SetCursor(ctx, s, 2); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(ts.file("k:1"))
	if err := ts.Archive(ctx, s); err != nil {
		t.Fatal(err)
	}
	if s.Key != "k:1" || len(s.Messages) != 0 || s.LastConsolidated != 0 || len(s.Metadata) != 0 {
		t.Errorf("after Archive: %+v, want an empty session with the same key", s)
	}
	if got := ts.load(t, "k:1"); got != s {
		t.Errorf("Load after Archive returned another *Session")
	}
	r := ts.reopen(t).load(t, "k:1")
	if len(r.Messages) != 0 || r.LastConsolidated != 0 {
		t.Errorf("reloaded after Archive: %d messages, cursor %d", len(r.Messages), r.LastConsolidated)
	}
	checkFileValid(t, ts.file("k:1"))

	archived, _ := filepath.Glob(filepath.Join(ts.dir, "*@*.jsonl"))
	if len(archived) != 1 {
		t.Fatalf("archived files %q, want one", archived)
	}
	if got, _ := os.ReadFile(archived[0]); !cmp.Equal(old, got) {
		t.Errorf("archived file differs from the old conversation")
	}

	ts.append(t, s, u("new"))
	if err := ts.Archive(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := ts.Archive(ctx, s); err != nil { // empty session: still fine
		t.Fatal(err)
	}
	archived, _ = filepath.Glob(filepath.Join(ts.dir, "*@*.jsonl"))
	if len(archived) != 3 {
		t.Errorf("archived files %q, want three", archived)
	}
	infos, err := ts.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Key != "k:1" {
		t.Errorf("List = %+v, want only k:1", infos)
	}
}

func TestArchiveNameCollision(t *testing.T) {
	fixed := fakeClock()()
	ts := newTestStore(t, "", FileStoreOptions{Now: func() time.Time { return fixed }})
	s := ts.load(t, "k:1")
	for i := range 3 {
		ts.append(t, s, u(fmt.Sprint(i)))
		if err := ts.Archive(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	archived, _ := filepath.Glob(filepath.Join(ts.dir, "*@*.jsonl"))
	if len(archived) != 3 {
		t.Errorf("archives with the same clock: %q, want three files", archived)
	}
}

func TestForeignSession(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{})
	other := newTestStore(t, "", FileStoreOptions{})
	ctx := context.Background()
	for name, s := range map[string]*Session{
		"hand-made":   {Key: "k:1"},
		"other store": other.load(t, "k:1"),
		"nil":         nil,
	} {
		if err := ts.Append(ctx, s, u("x")); !errors.Is(err, ErrForeignSession) {
			t.Errorf("%s: Append err = %v, want ErrForeignSession", name, err)
		}
		if err := ts.Archive(ctx, s); !errors.Is(err, ErrForeignSession) {
			t.Errorf("%s: Archive err = %v, want ErrForeignSession", name, err)
		}
	}
	if _, err := ts.Load(ctx, ""); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("Load(\"\") err = %v, want ErrInvalidKey", err)
	}
}

func TestFileVanished(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{})
	s := ts.load(t, "k:1")
	ts.append(t, s, u("one"))
	if err := os.Remove(ts.file("k:1")); err != nil {
		t.Fatal(err)
	}
	ts.append(t, s, a("two"))
	checkFileValid(t, ts.file("k:1"))
	if got := len(ts.reopen(t).load(t, "k:1").Messages); got != 2 {
		t.Errorf("after the file vanished and an append: %d messages on disk, want 2", got)
	}
}

func TestLRUEviction(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{MaxCached: 100, NoSync: true})
	held := ts.load(t, "held:0")
	ts.append(t, held, u("before eviction"))
	for i := range 10_000 {
		ts.load(t, fmt.Sprint("idle:", i))
	}
	if got := ts.cache.len(); got != 100 {
		t.Errorf("%d sessions cached after loading 10,000, want 100", got)
	}
	ts.cache.mu.Lock()
	_, inLRU := ts.cache.idx["held:0"]
	ts.cache.mu.Unlock()
	if inLRU {
		t.Fatalf("held:0 still in the LRU; the test needs it evicted")
	}
	// The agent still holds the evicted session and keeps using it.
	ts.append(t, held, a("after eviction"))
	if got := ts.load(t, "held:0"); got != held {
		t.Errorf("Load of a held, evicted session returned a second copy")
	}
	ts.append(t, held, u("again"))
	got := ts.reopen(t).load(t, "held:0")
	var texts []string
	for _, m := range got.Messages {
		texts = append(texts, m.Content)
	}
	if want := []string{"before eviction", "after eviction", "again"}; !cmp.Equal(want, texts) {
		t.Errorf("on disk: %q, want %q", texts, want)
	}
	if got := ts.cache.len(); got > 100 {
		t.Errorf("%d sessions cached, want at most 100", got)
	}
}

func TestEvictedSessionReloads(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{MaxCached: 2, NoSync: true})
	for _, k := range []string{"a:1", "b:1", "c:1"} {
		ts.append(t, ts.load(t, k), u("hello "+k))
	}
	for _, k := range []string{"a:1", "b:1", "c:1"} {
		s := ts.load(t, k)
		if len(s.Messages) != 1 || s.Messages[0].Content != "hello "+k {
			t.Errorf("%s after eviction: %+v", k, s.Messages)
		}
	}
}

func TestConcurrentAppends(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{MaxCached: 4, NoSync: true})
	ctx := context.Background()
	const sessions, perSession, sameKeyWriters = 16, 25, 8
	var wg sync.WaitGroup
	errs := make(chan error, sessions+sameKeyWriters)
	for i := range sessions {
		wg.Go(func() {
			key := fmt.Sprint("par:", i)
			for j := range perSession {
				s, err := ts.Load(ctx, key) // reload each time: eviction races with use
				if err == nil {
					err = ts.Append(ctx, s, u(fmt.Sprint(key, "#", j)))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	shared := ts.load(t, "shared:1")
	for w := range sameKeyWriters {
		wg.Go(func() {
			for j := range perSession {
				if err := ts.Append(ctx, shared, u(fmt.Sprint(w, "#", j))); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	r := ts.reopen(t)
	for i := range sessions {
		key := fmt.Sprint("par:", i)
		s := r.load(t, key)
		if len(s.Messages) != perSession {
			t.Errorf("%s: %d messages on disk, want %d", key, len(s.Messages), perSession)
			continue
		}
		for j, m := range s.Messages {
			if want := fmt.Sprint(key, "#", j); m.Content != want {
				t.Errorf("%s message %d = %q, want %q", key, j, m.Content, want)
			}
		}
	}
	s := r.load(t, "shared:1")
	seen := map[string]bool{}
	for _, m := range s.Messages {
		if seen[m.Content] {
			t.Errorf("shared:1: duplicate %q", m.Content)
		}
		seen[m.Content] = true
	}
	if len(seen) != sameKeyWriters*perSession {
		t.Errorf("shared:1: %d distinct messages, want %d", len(seen), sameKeyWriters*perSession)
	}
	checkFileValid(t, r.file("shared:1"))
}
