package session

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/nanobot-go/nanobot/providers"
)

// cmpMsgs compares messages treating nil and empty slices alike.
var cmpMsgs = cmpopts.EquateEmpty()

// logBuffer collects log output for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// fakeClock returns a clock that advances one second per call.
func fakeClock() func() time.Time {
	var n atomic.Int64
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return func() time.Time { return base.Add(time.Duration(n.Add(1)) * time.Second) }
}

type testStore struct {
	*FileStore
	dir  string
	logs *logBuffer
}

// newTestStore opens a FileStore on dir (a fresh temp dir when empty).
func newTestStore(t testing.TB, dir string, opts FileStoreOptions) testStore {
	t.Helper()
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "sessions")
	}
	logs := &logBuffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	if opts.Now == nil {
		opts.Now = fakeClock()
	}
	f, err := NewFileStore(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return testStore{f, dir, logs}
}

// reopen simulates a restart: a new store on the same folder.
func (ts testStore) reopen(t testing.TB) testStore {
	t.Helper()
	return newTestStore(t, ts.dir, FileStoreOptions{NoSync: !ts.sync})
}

func (ts testStore) load(t testing.TB, key string) *Session {
	t.Helper()
	s, err := ts.Load(context.Background(), key)
	if err != nil {
		t.Fatalf("Load(%q): %v", key, err)
	}
	return s
}

func (ts testStore) append(t testing.TB, s *Session, msgs ...providers.Message) {
	t.Helper()
	if err := ts.Append(context.Background(), s, msgs...); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

func (ts testStore) file(key string) string { return ts.path(encodeKey(key)) }

// checkFileValid asserts that every line of the file decodes, the first one
// being a metadata line.
func checkFileValid(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("%s does not end in a newline", filepath.Base(path))
	}
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		_, meta, err := decodeLine([]byte(line))
		if err != nil {
			t.Errorf("%s line %d does not decode: %v: %q", filepath.Base(path), i+1, err, line)
		}
		if i == 0 && meta == nil {
			t.Errorf("%s line 1 is not a metadata line: %q", filepath.Base(path), line)
		}
	}
}

// tempFiles lists leftover temporary files in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			out = append(out, e.Name())
		}
	}
	return out
}
