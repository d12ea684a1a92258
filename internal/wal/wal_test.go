package wal_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/internal/wal"
	"github.com/nanobot-go/nanobot/internal/wal/waltest"
)

func readAll(t *testing.T, path string, opts wal.Options) (*wal.Log, []string) {
	t.Helper()
	var got []string
	l, err := wal.Open(path, opts, func(p []byte) error { got = append(got, string(p)); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return l, got
}

// A crash mid-write leaves a torn last line; the next record appended
// after a restart must stay readable (it used to share the torn line).
func TestTornTailCutOnOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l, _ := readAll(t, path, wal.Options{})
	for _, r := range []string{`{"n":1}`, `{"n":2}`} {
		if err := l.Append([]byte(r), true); err != nil {
			t.Fatal(err)
		}
	}
	_ = l.Close()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	_, _ = f.WriteString(`~00000000 {"n":3,"tor`)
	_ = f.Close()

	l, got := readAll(t, path, wal.Options{})
	if strings.Join(got, ",") != `{"n":1},{"n":2}` {
		t.Fatalf("records after a torn tail = %v", got)
	}
	if err := l.Append([]byte(`{"n":4}`), true); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	_, got = readAll(t, path, wal.Options{})
	if strings.Join(got, ",") != `{"n":1},{"n":2},{"n":4}` {
		t.Errorf("records = %v, want the one after the torn tail intact", got)
	}
}

// Journals written before checksums: plain JSON lines, one of them a torn
// record with the next record glued to it.
func TestOldFormatAndSalvage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	old := `{"op":"add","id":"1"}` + "\n" + `{"op":"add","id":"2","msg":{"chan` + `{"op":"add","id":"3"}` + "\n"
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	_, got := readAll(t, path, wal.Options{})
	if strings.Join(got, ",") != `{"op":"add","id":"1"},{"op":"add","id":"3"}` {
		t.Errorf("records = %v, want 1 and the salvaged 3", got)
	}
}

// A damaged byte in a checksummed line drops that line only.
func TestChecksumCatchesDamage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l, _ := readAll(t, path, wal.Options{})
	_ = l.Append([]byte(`{"n":1}`), false)
	_ = l.Append([]byte(`{"n":2}`), false)
	_ = l.Close()
	b, _ := os.ReadFile(path)
	i := strings.Index(string(b), `"n":1`)
	b[i+4] = '7'
	_ = os.WriteFile(path, b, 0o600)
	_, got := readAll(t, path, wal.Options{})
	if strings.Join(got, ",") != `{"n":2}` {
		t.Errorf("records = %v, want only the intact one", got)
	}
}

// Disk full at run time: the append fails with a WriteError that says so,
// the half-written record is cut off, and once space is back the next
// append works without reopening, with every record intact.
func TestDiskFullRecoversWithoutRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	var disk waltest.Disk
	l, _ := readAll(t, path, wal.Options{Open: disk.Open})
	if err := l.Append([]byte(`{"n":1}`), true); err != nil {
		t.Fatal(err)
	}
	disk.SetFull(true)
	for range 3 {
		err := l.Append([]byte(`{"n":"lost"}`), true)
		var we *wal.WriteError
		if !errors.As(err, &we) || !we.Full() {
			t.Fatalf("append on a full disk: %v, want a WriteError that is Full", err)
		}
	}
	if l.Err() == nil {
		t.Error("Err is nil while the disk is full")
	}
	if fi, _ := os.Stat(path); fi.Size() != int64(len(`~00000000 {"n":1}`)+1) {
		t.Errorf("file is %d bytes: the torn write was not cut off", fi.Size())
	}
	disk.SetFull(false)
	if err := l.Append([]byte(`{"n":2}`), true); err != nil {
		t.Fatal(err)
	}
	if l.Err() != nil {
		t.Errorf("Err = %v after a successful write", l.Err())
	}
	_ = l.Close()
	_, got := readAll(t, path, wal.Options{})
	if strings.Join(got, ",") != `{"n":1},{"n":2}` {
		t.Errorf("records = %v", got)
	}
	if disk.Failures() != 3 {
		t.Errorf("%d injected failures, want 3", disk.Failures())
	}
}

func TestRewriteFailsKeepsOldFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	var disk waltest.Disk
	l, _ := readAll(t, path, wal.Options{Open: disk.Open})
	_ = l.Append([]byte(`{"n":1}`), true)
	disk.SetFull(true)
	if err := l.Rewrite([][]byte{[]byte(`{"n":9}`)}); err == nil {
		t.Fatal("rewrite on a full disk succeeded")
	}
	disk.SetFull(false)
	_ = l.Append([]byte(`{"n":2}`), true)
	_ = l.Close()
	_, got := readAll(t, path, wal.Options{})
	if strings.Join(got, ",") != `{"n":1},{"n":2}` {
		t.Errorf("records = %v", got)
	}
	if m, _ := filepath.Glob(path + ".tmp-*"); len(m) != 0 {
		t.Errorf("temp files left: %v", m)
	}
}

// TestWorthCompactingAtOpen: a file of about its live records is replayed
// as it is; one of many superseded records, or with a damaged line, is
// worth compacting.
func TestWorthCompactingAtOpen(t *testing.T) {
	open := func(t *testing.T, lines int, damage bool) *wal.Log {
		path := filepath.Join(t.TempDir(), "log.jsonl")
		l, err := wal.Open(path, wal.Options{}, func([]byte) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		for i := range lines {
			if err := l.Append([]byte(fmt.Sprintf(`{"n":%d}`, i)), false); err != nil {
				t.Fatal(err)
			}
		}
		l.Close()
		if damage {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("~00000000 {\"n\":\"bad checksum\"}\n")
			f.Close()
		}
		l, err = wal.Open(path, wal.Options{}, func([]byte) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	if l := open(t, 300, false); l.Worth(100) {
		t.Error("300 records, 100 live: compacted at open")
	}
	if l := open(t, 1000, false); !l.Worth(100) {
		t.Error("1000 records, 100 live: not compacted at open")
	}
	if l := open(t, 10, true); !l.Worth(10) {
		t.Error("a damaged record: not compacted at open")
	}
}
