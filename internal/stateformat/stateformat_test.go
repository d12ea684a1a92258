package stateformat

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func record(t *testing.T, state string) Record {
	t.Helper()
	r, err := read(filepath.Join(state, FileName), filepath.Dir(state), "")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNewFolderStartsCurrent(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	up, err := Open(dir, state, "test")
	if err != nil || len(up.Steps) != 0 {
		t.Fatalf("new folder: %+v %v", up, err)
	}
	if r := record(t, state); r.Version != Current || r.By != "test" {
		t.Errorf("recorded %+v, want format %d by test", r, Current)
	}
	if fi, err := os.Stat(filepath.Join(state, FileName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("format.json: %v %v", fi.Mode(), err)
	}
}

func TestOlderFolderIsUpgradedStepByStep(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(filepath.Join(dir, "sessions"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sessions", "telegram_1.jsonl"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	saved := Steps
	t.Cleanup(func() { Steps = saved })
	var ran []int
	Steps = []Step{{From: 1, What: "one", Run: func(string) error { ran = append(ran, 1); return nil }}}
	up, err := Open(dir, state, "test")
	if err != nil || up.From != 1 || up.To != Current || len(up.Steps) != 1 || len(ran) != 1 {
		t.Fatalf("upgrade: %+v %v (ran %v)", up, err, ran)
	}
	if r := record(t, state); r.Version != Current || r.By != "test" {
		t.Errorf("recorded %+v", r)
	}
	if _, err := Open(dir, state, "test"); err != nil || len(ran) != 1 {
		t.Errorf("a current folder was upgraded again (%v, ran %v)", err, ran)
	}
}

func TestAFailedStepKeepsTheOlderRecord(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(filepath.Join(dir, "cron"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cron", "jobs.json"), []byte("[]"), 0o600); err != nil {
		t.Fatal(err)
	}
	saved := Steps
	t.Cleanup(func() { Steps = saved })
	Steps = []Step{{From: 1, What: "convert the journal", Run: func(string) error { return errors.New("disk full") }}}
	if _, err := Open(dir, state, "test"); err == nil || !strings.Contains(err.Error(), "convert the journal") {
		t.Fatalf("failed step: %v", err)
	}
	if _, err := os.Stat(filepath.Join(state, FileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a record was written after a failed step: %v", err)
	}
}

func TestNewerFolderIsRefusedUntouched(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"version": 99, "by": "nanobot v9.0.0"}`)
	if err := os.WriteFile(filepath.Join(state, FileName), body, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, state, "test")
	var tooNew *TooNewError
	if !errors.As(err, &tooNew) || tooNew.Found != 99 || !strings.Contains(err.Error(), "nanobot v9.0.0") || !strings.Contains(err.Error(), "Upgrade nanobot") {
		t.Fatalf("newer folder: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(state, FileName)); string(b) != string(body) {
		t.Errorf("the newer record was changed: %s", b)
	}
	if err := os.WriteFile(filepath.Join(state, FileName), []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, state, "test"); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("damaged record: %v", err)
	}
}
