package recall

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nanobot-go/nanobot/internal/syncbuf"
	"github.com/nanobot-go/nanobot/tools"
)

// feed is a Feed in memory: each file is its messages, each message a
// "line" of lineBytes bytes.
type feed struct {
	mu    sync.Mutex
	files map[string][]Message
	reads []string // "name@offset" of every ReadFrom
	fail  error
}

const lineBytes = 100

func newFeed() *feed { return &feed{files: map[string][]Message{}} }

func (f *feed) add(name string, ms ...Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[name] = append(f.files[name], ms...)
}

func (f *feed) replace(name string, ms ...Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ms == nil {
		delete(f.files, name)
		return
	}
	f.files[name] = ms
}

func (f *feed) Files(context.Context) ([]FeedFile, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	var out []FeedFile
	for n, ms := range f.files {
		out = append(out, FeedFile{Name: n, Size: int64(len(ms) * lineBytes)})
	}
	return out, nil
}

func (f *feed) ReadFrom(ctx context.Context, name string, offset int64, fn func(Message) error) (int64, error) {
	f.mu.Lock()
	ms := append([]Message(nil), f.files[name]...)
	f.reads = append(f.reads, fmt.Sprintf("%s@%d", name, offset))
	f.mu.Unlock()
	for _, m := range ms[offset/lineBytes:] {
		if err := fn(m); err != nil {
			return 0, err
		}
	}
	return int64(len(ms) * lineBytes), nil
}

func (f *feed) TailSum(name string, offset int64) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ms := f.files[name]
	if offset > int64(len(ms)*lineBytes) {
		return 0, errors.New("short file")
	}
	h := fnv.New64a()
	if n := offset / lineBytes; n > 0 {
		fmt.Fprint(h, ms[n-1].Text)
	}
	return h.Sum64(), nil
}

func (f *feed) readLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.reads
	f.reads = nil
	return out
}

func workspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	mem := filepath.Join(ws, "memory")
	if err := os.MkdirAll(mem, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(mem, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("MEMORY.md", "# Memory\n\n## People\n\nAda's sister is called Grace; she lives in Lyon.\n\n## Preferences\n\nAda takes her coffee black.\n")
	write("HISTORY.md", "[2026-11-02 09:14] Ada planned a trip to Kyoto in April and asked for ryokan suggestions.\n\n[2026-11-20 18:40] Ada's laptop broke; she ordered a ThinkPad X1.\n")
	return ws
}

// open returns a tool over a new index of ws and feed, closed at the end.
func open(t *testing.T, ws string, f Feed, emb Embedder) (*Tool, *Index) {
	t.Helper()
	x := NewIndex(IndexOptions{Workspace: ws, Feed: f, Embedder: emb, Logger: slog.New(slog.NewTextHandler(&logBuf{t: t}, nil))})
	t.Cleanup(func() { x.Close() })
	return New(x), x
}

// logBuf passes log lines to the test log.
type logBuf struct{ t *testing.T }

func (l *logBuf) Write(p []byte) (int, error) {
	l.t.Helper()
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func search(t *testing.T, tl *Tool, query string, limit int) string {
	t.Helper()
	args := map[string]any{"query": query}
	if limit > 0 {
		args["limit"] = float64(limit)
	}
	res, err := tl.Execute(context.Background(), args)
	if err != nil {
		t.Fatal(err)
	}
	return res.Content
}

// TestSearchCitesItsSources: the best hit for each question is the one
// that answers it, from MEMORY.md, HISTORY.md or a conversation, and says
// where it comes from.
func TestSearchCitesItsSources(t *testing.T) {
	f := newFeed()
	f.add("telegram_42.jsonl",
		Message{Session: "telegram:42", Role: "user", Text: "My flight to Kyoto is JL 407 on April 3rd, seat 31A.", Time: "2026-11-05T10:00:00Z"},
		Message{Session: "telegram:42", Role: "assistant", Text: "Noted: JL 407 on April 3rd.", Time: "2026-11-05T10:00:02Z"})
	f.add("slack_D1@2026.jsonl",
		Message{Session: "slack:D1", Archived: true, Role: "user", Text: "The wifi password at the cabin is fjord-2291", Time: "2026-10-01T08:00:00Z"},
		Message{Session: "slack:D1", Archived: true, Role: "tool", Text: "flight results from a web search about Kyoto"})
	f.add("web_x.jsonl", Message{Session: "web:x", Role: "user", Text: "我的护照号码是E12345678，下个月去北京出差。", Time: "2026-11-25T03:00:00Z"})
	tl, _ := open(t, workspace(t), f, nil)
	for _, tt := range []struct{ query, first, source string }{
		{"what is Grace's city?", "Lyon", "[MEMORY.md § People]"},
		{"Kyoto flight number", "JL 407", "[conversation telegram:42, the user, 2026-11-05 10:00 UTC]"},
		{"laptop ThinkPad", "ThinkPad X1", "[HISTORY.md, 2026-11-20 18:40]"},
		{"cabin wifi password", "fjord-2291", "[conversation slack:D1 (archived), the user, 2026-10-01 08:00 UTC]"},
		{"护照号码", "E12345678", "[conversation web:x, the user, 2026-11-25 03:00 UTC]"},
	} {
		got := search(t, tl, tt.query, 1)
		if !strings.Contains(got, tt.first) || !strings.Contains(got, tt.source) {
			t.Errorf("%q: best hit\n%s\nwant %q from %s", tt.query, got, tt.first, tt.source)
		}
	}
	if got := search(t, tl, "flight", 0); strings.Contains(got, "web search about Kyoto") {
		t.Errorf("a tool result was searched:\n%s", got)
	}
	if got := search(t, tl, "submarine volcano", 0); !strings.HasPrefix(got, "Nothing found") {
		t.Errorf("no match: %q", got)
	}
	if _, err := tl.Execute(context.Background(), map[string]any{"query": "the of and"}); err == nil {
		t.Error("a query of stop words only was taken")
	}
}

// TestSearchLimitsAndSnippets: limit caps the results; a long message is
// cut to a snippet around the match.
func TestSearchLimitsAndSnippets(t *testing.T) {
	long := strings.Repeat("filler words about nothing in particular ", 40) + "the locker code is 4471 " + strings.Repeat("more filler after it ", 40)
	f := newFeed()
	for i := range 30 {
		f.add("telegram_1.jsonl", Message{Session: "telegram:1", Role: "user", Text: "remember the locker please " + strings.Repeat("x", i)})
	}
	f.add("telegram_1.jsonl", Message{Session: "telegram:1", Role: "user", Text: long})
	tl, _ := open(t, t.TempDir(), f, nil)
	got := search(t, tl, "locker code 4471", 3)
	if n := strings.Count(got, "\n\n"); n != 3 {
		t.Errorf("%d results, want 3:\n%s", n, got)
	}
	if !strings.Contains(got, "locker code is 4471") || strings.Contains(got, strings.Repeat("filler words about nothing in particular ", 12)) {
		t.Errorf("the long message is not cut around its match:\n%s", got)
	}
}

// TestSearchReportsAStoreThatFails: a store that cannot be read is an
// error for the model, not an empty answer.
func TestSearchReportsAStoreThatFails(t *testing.T) {
	f := newFeed()
	f.fail = errors.New("disk on fire")
	tl, _ := open(t, t.TempDir(), f, nil)
	if _, err := tl.Execute(context.Background(), map[string]any{"query": "anything"}); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("err = %v", err)
	}
}

// TestSearchKeepsOtherConversationsToAdmins: someone who is not an admin
// finds what was said in their own conversation, and nothing of anyone
// else's; an admin finds both.
func TestSearchKeepsOtherConversationsToAdmins(t *testing.T) {
	f := newFeed()
	f.add("a.jsonl", Message{Session: "telegram:42", Role: "user", Text: "my locker code is 4471"})
	f.add("b.jsonl", Message{Session: "telegram:99", Role: "user", Text: "my locker code is 9983"})
	tl, _ := open(t, t.TempDir(), f, nil)
	as := func(admin bool) string {
		ctx := tools.WithCallContext(context.Background(), tools.CallContext{SessionKey: "telegram:42", Admin: admin})
		res, err := tl.Execute(ctx, map[string]any{"query": "locker code"})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content
	}
	if got := as(false); !strings.Contains(got, "4471") || strings.Contains(got, "9983") {
		t.Errorf("a non-admin's search:\n%s", got)
	}
	if got := as(true); !strings.Contains(got, "4471") || !strings.Contains(got, "9983") {
		t.Errorf("an admin's search:\n%s", got)
	}
}

func logger(w *syncbuf.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, nil))
}
