package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestWriteCreatesAndReplaces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "secret.json")
	for _, content := range []string{"first", "second, longer content"} {
		if err := Write(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != content {
			t.Errorf("content %q, want %q", got, content)
		}
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700 | os.ModeDir} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s mode %v, want %v", p, fi.Mode(), want)
		}
	}
	if err := Write(path, []byte("public"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v after a 0644 write, want 0644 (the umask must not decide)", fi.Mode().Perm())
	}
	assertNoTemp(t, filepath.Dir(path))
}

var errDiskFull = errors.New("disk full")

type failingWriter struct {
	w io.Writer
	n int
}

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		n, _ := f.w.Write(p[:f.n])
		return n, errDiskFull
	}
	return f.w.Write(p)
}

func TestFailedWriteKeepsOldContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := Write(path, []byte("old content"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := Options{Wrap: func(w io.Writer) io.Writer { return &failingWriter{w: w, n: 3} }}
	err := o.Write(path, []byte("new content that does not fit"), 0o600)
	if !errors.Is(err, errDiskFull) || !strings.Contains(err.Error(), path) {
		t.Fatalf("err %v, want disk full naming %s", err, path)
	}
	if got, _ := os.ReadFile(path); string(got) != "old content" {
		t.Errorf("content %q after a failed write, want the old content", got)
	}
	assertNoTemp(t, filepath.Dir(path))
}

func TestUpdateLosesNoChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "counter")
	const workers, each = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for range workers {
		wg.Go(func() {
			for range each {
				errs <- Options{NoSync: true}.Update(path, 0o600, func(old []byte) ([]byte, error) {
					n, _ := strconv.Atoi(string(old))
					return []byte(strconv.Itoa(n + 1)), nil
				})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := os.ReadFile(path); string(got) != strconv.Itoa(workers*each) {
		t.Errorf("counter %s, want %d", got, workers*each)
	}
	errNo := errors.New("refused")
	if err := Update(path, 0o600, func([]byte) ([]byte, error) { return nil, errNo }); err != errNo {
		t.Errorf("err %v, want fn's error as is", err)
	}
	if got, _ := os.ReadFile(path); string(got) != strconv.Itoa(workers*each) {
		t.Errorf("a refused update wrote %q", got)
	}
}

// TestCrashLeavesOldOrNew kills a process that keeps replacing a file at
// random moments (SIGKILL, no chance to clean up) and checks that the file
// always holds one complete version. Each version is a run of one repeated
// digit, 64 KiB long, so a torn file shows as mixed digits or a short file.
func TestCrashLeavesOldOrNew(t *testing.T) {
	if path := os.Getenv("ATOMICFILE_CRASH_CHILD"); path != "" {
		for i := 1; ; i++ {
			if err := Write(path, version(i), 0o600); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			if i == 1 {
				fmt.Println("written")
			}
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	if err := Write(path, version(0), 0o600); err != nil {
		t.Fatal(err)
	}
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashLeavesOldOrNew$")
		cmd.Env = append(os.Environ(), "ATOMICFILE_CRASH_CHILD="+path)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait until the child has replaced the file once, so the kill
		// lands in the middle of its work, then kill it a moment later.
		line := make([]byte, len("written\n"))
		if _, err := io.ReadFull(out, line); err != nil {
			t.Fatalf("round %d: the child never wrote: %v", round, err)
		}
		time.Sleep(time.Duration(round%7) * 300 * time.Microsecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !complete(got) {
			t.Fatalf("round %d: torn file: %d bytes, starts %q", round, len(got), got[:min(len(got), 16)])
		}
	}
}

const versionSize = 64 << 10

func version(i int) []byte { return bytes.Repeat([]byte{byte('0' + i%10)}, versionSize) }

func complete(b []byte) bool {
	return len(b) == versionSize && bytes.Count(b, b[:1]) == versionSize
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}
