package recall

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/syncbuf"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/tools/recall/recalltest"
)

func msg(session, text string) Message {
	return Message{Session: session, Role: "user", Text: text, Time: "2026-11-05T10:00:00Z"}
}

// TestIndexReadsOnlyWhatWasAdded: after the first search, a search reads
// each grown file from where it stopped, skips unchanged ones, reads a
// replaced one from the start (its old pieces gone) and forgets one that
// went away.
func TestIndexReadsOnlyWhatWasAdded(t *testing.T) {
	f := newFeed()
	f.add("a.jsonl", msg("t:1", "the boat is called Aurora"))
	f.add("b.jsonl", msg("t:2", "my dentist is Dr. Okafor"))
	tl, _ := open(t, t.TempDir(), f, nil)
	search(t, tl, "boat", 0)
	if got := f.readLog(); !slices.Equal(sorted(got), []string{"a.jsonl@0", "b.jsonl@0"}) {
		t.Errorf("first search read %v", got)
	}

	f.add("a.jsonl", msg("t:1", "the boat's mooring is in Brest"))
	if got := search(t, tl, "boat mooring", 0); !strings.Contains(got, "Brest") {
		t.Errorf("the added message is not found:\n%s", got)
	}
	if got := f.readLog(); !slices.Equal(got, []string{"a.jsonl@100"}) {
		t.Errorf("second search read %v, want a.jsonl from 100 only", got)
	}

	f.replace("a.jsonl", msg("t:1", "the boat was sold in May"))
	got := search(t, tl, "boat", 0)
	if !strings.Contains(got, "sold in May") || strings.Contains(got, "Aurora") || strings.Contains(got, "Brest") {
		t.Errorf("after the file was replaced:\n%s", got)
	}
	if got := f.readLog(); !slices.Equal(got, []string{"a.jsonl@0"}) {
		t.Errorf("a replaced file was read %v, want from 0", got)
	}

	f.replace("b.jsonl")
	if got := search(t, tl, "dentist Okafor", 0); !strings.HasPrefix(got, "Nothing found") {
		t.Errorf("a file that went away is still found:\n%s", got)
	}
}

func sorted(s []string) []string { slices.Sort(s); return s }

// TestIndexSurvivesARestart: a new Index over the same workspace reads
// the saved one and goes on from where it stood; a memory file edited
// meanwhile is read again.
func TestIndexSurvivesARestart(t *testing.T) {
	ws := workspace(t)
	f := newFeed()
	f.add("a.jsonl", msg("t:1", "the garage door code is 8812"))
	first := NewIndex(IndexOptions{Workspace: ws, Feed: f})
	if _, _, err := first.Search(context.Background(), "garage", 5, Scope{}); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(ws, IndexDir, "index.gob")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("saved index: %v %v", fi, err)
	}
	f.readLog()
	f.add("a.jsonl", msg("t:1", "the garage is behind the bakery"))
	if err := os.WriteFile(filepath.Join(ws, "memory", "MEMORY.md"), []byte("## Car\n\nThe car is a green Renault 5.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tl, _ := open(t, ws, f, nil)
	got := search(t, tl, "garage code bakery", 5)
	if !strings.Contains(got, "8812") || !strings.Contains(got, "bakery") {
		t.Errorf("after a restart:\n%s", got)
	}
	if got := f.readLog(); !slices.Equal(got, []string{"a.jsonl@100"}) {
		t.Errorf("after a restart the file was read %v, want from 100", got)
	}
	if got := search(t, tl, "Renault", 1); !strings.Contains(got, "green Renault") {
		t.Errorf("the edited MEMORY.md:\n%s", got)
	}
	if got := search(t, tl, "Grace Lyon", 5); strings.Contains(got, "lives in Lyon") {
		t.Errorf("the old MEMORY.md is still found:\n%s", got)
	}
}

// TestIndexRebuildsADamagedFile: a saved index that is cut short, has a
// flipped byte or is not one at all is rebuilt from the files, and the
// rebuild is logged.
func TestIndexRebuildsADamagedFile(t *testing.T) {
	for name, damage := range map[string]func([]byte) []byte{
		"cut short":    func(b []byte) []byte { return b[:len(b)/2] },
		"flipped byte": func(b []byte) []byte { b[len(b)-10] ^= 0xff; return b },
		"not an index": func([]byte) []byte { return []byte("hello") },
	} {
		t.Run(name, func(t *testing.T) {
			ws := t.TempDir()
			f := newFeed()
			f.add("a.jsonl", msg("t:1", "the spare key is under the blue pot"))
			x := NewIndex(IndexOptions{Workspace: ws, Feed: f})
			if _, _, err := x.Search(context.Background(), "key", 5, Scope{}); err != nil {
				t.Fatal(err)
			}
			x.Close()
			path := filepath.Join(ws, IndexDir, "index.gob")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, damage(data), 0o600); err != nil {
				t.Fatal(err)
			}
			var logs syncbuf.Buffer
			x = NewIndex(IndexOptions{Workspace: ws, Feed: f, Logger: logger(&logs)})
			defer x.Close()
			hits, _, err := x.Search(context.Background(), "spare key", 5, Scope{})
			if err != nil || len(hits) != 1 || !strings.Contains(hits[0].Text, "blue pot") {
				t.Fatalf("after damage: %v %v", hits, err)
			}
			if !strings.Contains(logs.String(), "rebuilding it from the files") {
				t.Errorf("the rebuild was not logged:\n%s", logs.String())
			}
		})
	}
}

// TestHybridFindsWhatWordsMiss: with an embedder, a question worded
// differently from the message (plural, another form of the word) still
// finds it, and the hit says it was found by meaning; without one it is
// not found.
func TestHybridFindsWhatWordsMiss(t *testing.T) {
	f := newFeed()
	f.add("a.jsonl", msg("t:1", "Booked the flights to Lisbon for the conference"))
	for i := range 20 {
		f.add("a.jsonl", msg("t:1", "chatter about the weather and lunch number "+strings.Repeat("z", i)))
	}
	emb := &recalltest.Embedder{}
	_, words := open(t, t.TempDir(), f, nil)
	_, hybrid := open(t, t.TempDir(), f, emb)
	q := "which flight did I book to Lisbon's conferences"
	wh, _, err := words.Search(context.Background(), "flight booking", 3, Scope{})
	if err != nil || len(wh) != 0 {
		t.Errorf("words alone found %v (%v); the test needs a miss", wh, err)
	}
	hh, _, err := hybrid.Search(context.Background(), q, 3, Scope{})
	if err != nil || len(hh) == 0 || !strings.Contains(hh[0].Text, "Lisbon") || !hh[0].Meaning {
		t.Fatalf("hybrid: %+v %v", hh, err)
	}
	if st := hybrid.Stats(); st.Embedded != 21 || st.Pieces != 21 {
		t.Errorf("stats %+v, want 21 pieces embedded", st)
	}
	calls := emb.Texts.Load()
	if _, _, err := hybrid.Search(context.Background(), q, 3, Scope{}); err != nil {
		t.Fatal(err)
	}
	if got := emb.Texts.Load() - calls; got != 1 {
		t.Errorf("a second search embedded %d texts, want only the query", got)
	}
}

// TestEmbedderDownFallsBackToWords: an embedder that fails leaves the
// search to the words, logs once, and the pieces are embedded when it
// works again; a new model embeds everything again.
func TestEmbedderDownFallsBackToWords(t *testing.T) {
	f := newFeed()
	f.add("a.jsonl", msg("t:1", "the wifi password is fjord-2291"))
	emb := &recalltest.Embedder{}
	emb.Fail.Store(true)
	var logs syncbuf.Buffer
	x := NewIndex(IndexOptions{Workspace: t.TempDir(), Feed: f, Embedder: emb, Logger: logger(&logs)})
	defer x.Close()
	for range 3 {
		hits, _, err := x.Search(context.Background(), "wifi password", 3, Scope{})
		if err != nil || len(hits) != 1 || hits[0].Meaning {
			t.Fatalf("with the embedder down: %+v %v", hits, err)
		}
	}
	if n := strings.Count(logs.String(), "embedding failed"); n != 1 {
		t.Errorf("the failure was logged %d times:\n%s", n, logs.String())
	}
	emb.Fail.Store(false)
	hits, _, err := x.Search(context.Background(), "wifi password", 3, Scope{})
	if err != nil || len(hits) != 1 || !hits[0].Meaning || !hits[0].Words {
		t.Fatalf("with the embedder back: %+v %v", hits, err)
	}
	emb.Name = "another-model"
	before := emb.Texts.Load()
	if _, _, err := x.Search(context.Background(), "wifi", 3, Scope{}); err != nil {
		t.Fatal(err)
	}
	if got := emb.Texts.Load() - before; got != 2 {
		t.Errorf("after a model change %d texts were embedded, want the piece and the query", got)
	}
}

// TestIndexUnloadsWhenIdle: an index nobody searched for Idle is saved
// and let go; the next search loads it again and finds the same.
func TestIndexUnloadsWhenIdle(t *testing.T) {
	f := newFeed()
	f.add("a.jsonl", msg("t:1", "the bike lock combination is 5150"))
	x := NewIndex(IndexOptions{Workspace: t.TempDir(), Feed: f, Idle: 50 * time.Millisecond})
	defer x.Close()
	if _, _, err := x.Search(context.Background(), "bike", 3, Scope{}); err != nil {
		t.Fatal(err)
	}
	waitfor.Within(t, "the idle index let go", 10*time.Second, func() bool { return !x.loaded() })
	f.readLog()
	hits, _, err := x.Search(context.Background(), "bike lock", 3, Scope{})
	if err != nil || len(hits) != 1 {
		t.Fatalf("after the unload: %v %v", hits, err)
	}
	if got := f.readLog(); len(got) != 0 {
		t.Errorf("the reload read %v; the saved offsets should have sufficed", got)
	}
}

// TestNotifyUpdatesInTheBackground: after Notify a loaded index reads the
// new turn without a search asking it to.
func TestNotifyUpdatesInTheBackground(t *testing.T) {
	f := newFeed()
	f.add("a.jsonl", msg("t:1", "first"))
	x := NewIndex(IndexOptions{Workspace: t.TempDir(), Feed: f})
	defer x.Close()
	if _, _, err := x.Search(context.Background(), "first", 3, Scope{}); err != nil {
		t.Fatal(err)
	}
	f.readLog()
	f.add("a.jsonl", msg("t:1", "second"))
	x.Notify()
	waitfor.Within(t, "Notify to update the index", 20*time.Second, func() bool { return x.Stats().Pieces == 2 })
}

// TestSearchesWhileItUpdates: searches, updates and Notify at once (run
// with the race detector) all find what was there before they began.
func TestSearchesWhileItUpdates(t *testing.T) {
	f := newFeed()
	f.add("a.jsonl", msg("t:1", "the anchor fact is walrus"))
	x := NewIndex(IndexOptions{Workspace: t.TempDir(), Feed: f, Embedder: &recalltest.Embedder{}})
	defer x.Close()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 20 {
				if w == 0 {
					f.add("a.jsonl", msg("t:1", "more chatter "+strings.Repeat("y", i)))
					x.Notify()
				}
				hits, _, err := x.Search(context.Background(), "walrus", 3, Scope{})
				if err != nil || len(hits) == 0 {
					t.Errorf("search %d/%d: %v %v", w, i, hits, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// gatedEmbedder, while block is set, signals entered and waits in Embed
// until release is closed.
type gatedEmbedder struct {
	recalltest.Embedder
	entered chan struct{} // receives when an Embed call waits
	release chan struct{}
	block   atomic.Bool
}

func (g *gatedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if g.block.Load() {
		g.entered <- struct{}{}
		<-g.release
	}
	return g.Embedder.Embed(ctx, texts)
}

// TestSearchDoesNotWaitForAnUpdate: while an update waits on the
// embedding service, a search answers from what is loaded instead of
// waiting for it.
func TestSearchDoesNotWaitForAnUpdate(t *testing.T) {
	f := newFeed()
	f.add("a.jsonl", msg("t:1", "the locker code is 4471"))
	emb := &gatedEmbedder{entered: make(chan struct{}, 1), release: make(chan struct{})}
	x := NewIndex(IndexOptions{Workspace: t.TempDir(), Feed: f, Embedder: emb})
	defer x.Close()
	if _, _, err := x.Search(context.Background(), "locker", 3, Scope{}); err != nil {
		t.Fatal(err)
	}
	f.add("a.jsonl", msg("t:1", "a new message to embed"))
	emb.block.Store(true)
	updated := make(chan error, 1)
	go func() { updated <- x.Refresh(context.Background()) }()
	<-emb.entered // the update holds the index and waits on the service
	emb.block.Store(false)
	hits, _, err := x.Search(context.Background(), "locker code", 3, Scope{})
	if err != nil || len(hits) == 0 || !strings.Contains(hits[0].Text, "4471") {
		t.Errorf("a search during the update: %v %v", hits, err)
	}
	close(emb.release)
	if err := <-updated; err != nil {
		t.Fatal(err)
	}
}

// gatedFeed holds its first ReadFrom until released.
type gatedFeed struct {
	*feed
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (g *gatedFeed) ReadFrom(ctx context.Context, name string, offset int64, fn func(Message) error) (int64, error) {
	g.once.Do(func() { close(g.entered); <-g.release })
	return g.feed.ReadFrom(ctx, name, offset, fn)
}

// TestFirstSearchesWaitForTheFirstUpdate: searches that come while the
// index is read for the first time wait for it, rather than search an
// index that holds nothing yet.
func TestFirstSearchesWaitForTheFirstUpdate(t *testing.T) {
	f := &gatedFeed{feed: newFeed(), entered: make(chan struct{}), release: make(chan struct{})}
	f.add("a.jsonl", msg("t:1", "the locker code is 4471"))
	x := NewIndex(IndexOptions{Workspace: t.TempDir(), Feed: f})
	defer x.Close()
	results := make(chan int, 6)
	search := func() {
		hits, _, err := x.Search(context.Background(), "locker code", 3, Scope{})
		if err != nil {
			t.Error(err)
		}
		results <- len(hits)
	}
	go search()
	<-f.entered // the first search holds the update, reading
	for range 5 {
		go search()
	}
	close(f.release)
	for range 6 {
		if n := <-results; n != 1 {
			t.Errorf("a search during the first update found %d hits, want 1", n)
		}
	}
}
