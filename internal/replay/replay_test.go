package replay_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/replay"
	"github.com/nanobot-go/nanobot/internal/wal"
	"github.com/nanobot-go/nanobot/internal/wal/waltest"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Unix(1_800_000_000, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func add(t *testing.T, s *replay.Set, key string, until time.Time) bool {
	t.Helper()
	fresh, err := s.Add(key, until)
	if err != nil {
		t.Fatalf("Add(%q): %v", key, err)
	}
	return fresh
}

func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// TestRemembersAcrossReopen: a key added before a restart is still seen
// after it, until its time; the file is the owner's only and holds no key.
func TestRemembersAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "seen")
	c := newClock()
	s := replay.New(path, replay.Options{Now: c.Now})
	until := c.Now().Add(10 * time.Minute)
	if !add(t, s, "sig-one", until) {
		t.Fatal("a new key is not fresh")
	}
	if add(t, s, "sig-one", until) {
		t.Fatal("a key added twice was fresh twice")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	c.Add(9 * time.Minute)
	s = replay.New(path, replay.Options{Now: c.Now})
	if add(t, s, "sig-one", until) {
		t.Error("a key added before a restart is fresh after it")
	}
	if !add(t, s, "sig-two", until) {
		t.Error("a new key after a restart is not fresh")
	}
	c.Add(time.Minute)
	if !add(t, s, "sig-one", c.Now().Add(time.Minute)) {
		t.Error("a key whose time passed is not fresh again")
	}

	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(path); bytes.Contains(b, []byte("sig-")) {
		t.Errorf("the file holds keys in the clear: %q", b)
	}
}

// TestSubSecondUntilIsNotShortenedByARestart: the file keeps whole seconds,
// rounded up.
func TestSubSecondUntilIsNotShortenedByARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seen")
	c := newClock()
	until := c.Now().Add(1500 * time.Millisecond)
	add(t, replay.New(path, replay.Options{Now: c.Now}), "k", until)
	c.Add(1600 * time.Millisecond)
	if add(t, replay.New(path, replay.Options{Now: c.Now}), "k", until) {
		t.Error("a key was forgotten before the second its time falls in ended")
	}
}

func TestConcurrentAddsOfOneKeyOneFresh(t *testing.T) {
	for _, path := range []string{"", filepath.Join(t.TempDir(), "seen")} {
		s := replay.New(path, replay.Options{})
		until := time.Now().Add(time.Minute)
		var fresh atomic.Int32
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				ok, err := s.Add("k", until)
				if err != nil {
					t.Error(err)
				}
				if ok {
					fresh.Add(1)
				}
			})
		}
		wg.Wait()
		if n := fresh.Load(); n != 1 {
			t.Errorf("path %q: %d of 16 concurrent Adds fresh, want 1", path, n)
		}
	}
}

// TestExpiredRecordsAreDropped: the file does not grow with every key ever
// added, while the process runs and at a restart.
func TestExpiredRecordsAreDropped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seen")
	c := newClock()
	s := replay.New(path, replay.Options{Now: c.Now})
	const n = 300
	for i := range n {
		add(t, s, fmt.Sprint("a", i), c.Now().Add(time.Minute))
	}
	if got := lines(t, path); got != n {
		t.Fatalf("file holds %d records after %d Adds", got, n)
	}
	c.Add(2 * time.Minute)
	for i := range n {
		add(t, s, fmt.Sprint("b", i), c.Now().Add(time.Minute))
	}
	if got, want := lines(t, path), 2*n; got >= want {
		t.Errorf("file holds %d records, %d live: expired ones were not dropped", got, n)
	}
	if got := s.Len(); got > n {
		t.Errorf("%d keys remembered, %d live", got, n)
	}

	c.Add(2 * time.Minute)
	s = replay.New(path, replay.Options{Now: c.Now})
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	if got := lines(t, path); got != 0 {
		t.Errorf("file holds %d records after a restart with none live, want 0", got)
	}
}

// TestTornOrDamagedFileLoads: a crash mid-write (a torn last line) or a
// damaged line loses at most that line's key, never the start.
func TestTornOrDamagedFileLoads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seen")
	c := newClock()
	until := c.Now().Add(time.Minute)
	s := replay.New(path, replay.Options{Now: c.Now})
	add(t, s, "one", until)
	add(t, s, "two", until)
	_ = s.Close()
	b, _ := os.ReadFile(path)
	// Flip a byte of the first record's hash (its checksum no longer
	// matches), add a line that is no record and a torn tail.
	b[12] ^= 1
	b = append(b, "garbage\n~0000 12"...)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}

	s = replay.New(path, replay.Options{Now: c.Now})
	if err := s.Load(); err != nil {
		t.Fatalf("Load of a damaged file: %v", err)
	}
	if add(t, s, "two", until) {
		t.Error("the intact record was lost")
	}
	if !add(t, s, "three", until) {
		t.Error("a new key after a damaged file is not fresh")
	}
	s = replay.New(path, replay.Options{Now: c.Now})
	if add(t, s, "three", until) || add(t, s, "two", until) {
		t.Error("keys added after the damage were lost at the next start")
	}
}

// failingSync opens real files whose Sync fails while fail is set.
type failingSync struct{ fail atomic.Bool }

func (f *failingSync) Open(name string, flag int, perm os.FileMode) (wal.File, error) {
	file, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return syncFile{file, f}, nil
}

type syncFile struct {
	*os.File
	f *failingSync
}

func (s syncFile) Sync() error {
	if s.f.fail.Load() {
		return &os.PathError{Op: "sync", Path: s.Name(), Err: syscall.EIO}
	}
	return s.File.Sync()
}

// TestKeyNotStoredIsNotSeen: when a key cannot be stored (a full disk, a
// failed fsync), Add reports the error, not a fresh key, and the key stays
// new for the next try.
func TestKeyNotStoredIsNotSeen(t *testing.T) {
	until := time.Now().Add(time.Minute)
	t.Run("write", func(t *testing.T) {
		var disk waltest.Disk
		s := replay.New(filepath.Join(t.TempDir(), "seen"), replay.Options{Open: disk.Open})
		disk.SetFull(true)
		if fresh, err := s.Add("k", until); fresh || err == nil || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Add on a full disk: %v %v, want false and ENOSPC", fresh, err)
		}
		disk.SetFull(false)
		if !add(t, s, "k", until) {
			t.Fatal("a key whose Add failed is not fresh on the next try")
		}
	})
	t.Run("sync", func(t *testing.T) {
		var open failingSync
		path := filepath.Join(t.TempDir(), "seen")
		s := replay.New(path, replay.Options{Open: open.Open})
		open.fail.Store(true)
		if fresh, err := s.Add("k", until); fresh || err == nil {
			t.Fatalf("Add with a failing fsync: %v %v, want false and an error", fresh, err)
		}
		open.fail.Store(false)
		if !add(t, s, "k", until) {
			t.Fatal("a key whose fsync failed is not fresh on the next try")
		}
		if add(t, replay.New(path, replay.Options{}), "k", until) {
			t.Error("the retried key was not stored")
		}
	})
}

func TestForget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seen")
	until := time.Now().Add(time.Minute)
	s := replay.New(path, replay.Options{})
	add(t, s, "taken", until)
	add(t, s, "refused", until)
	if err := s.Forget("refused"); err != nil {
		t.Fatal(err)
	}
	if !add(t, s, "refused", until) {
		t.Error("a forgotten key is not fresh")
	}
	if err := s.Forget("refused"); err != nil {
		t.Fatal(err)
	}
	s = replay.New(path, replay.Options{})
	if add(t, s, "taken", until) {
		t.Error("a key not forgotten is fresh after a restart")
	}
	if !add(t, s, "refused", until) {
		t.Error("a forgotten key is seen again after a restart")
	}
}

// TestMaxIsABound: at most Max keys are remembered; when all are still
// valid a new one is refused (never an old one forgotten early), and
// expired ones make room.
func TestMaxIsABound(t *testing.T) {
	c := newClock()
	s := replay.New("", replay.Options{Max: 3, Now: c.Now})
	start := c.Now()
	for i := range 3 {
		add(t, s, fmt.Sprint(i), start.Add(10*time.Minute+time.Duration(i)*time.Second))
	}
	if _, err := s.Add("3", start.Add(10*time.Minute)); !errors.Is(err, replay.ErrFull) {
		t.Fatalf("Add into a full set: %v, want ErrFull", err)
	}
	if add(t, s, "0", start.Add(11*time.Minute)) {
		t.Fatal("a remembered key was fresh again")
	}
	c.Add(10*time.Minute + 500*time.Millisecond) // key 0 expired, 1 and 2 not yet
	if !add(t, s, "3", c.Now().Add(10*time.Minute)) {
		t.Fatal("no room after a key expired")
	}
	if add(t, s, "1", c.Now().Add(10*time.Minute)) {
		t.Error("key 1, still in its window, was fresh again")
	}
	if _, err := s.Add("4", c.Now().Add(10*time.Minute)); !errors.Is(err, replay.ErrFull) {
		t.Errorf("Add into a set full again: %v, want ErrFull", err)
	}
	if n := s.Len(); n != 3 {
		t.Errorf("set holds %d keys, want 3", n)
	}
}
