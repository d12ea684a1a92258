package devstore_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mau.fi/whatsmeow/types"

	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/whatsapp/devstore"
)

func TestFileIsPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wa.gob")
	paired(t, path, alicePN)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

// Every damaged file is refused with ErrCorrupt and its path, and left as
// it was: truncated at any length, one bit flipped, another format.
func TestDamagedFileIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wa.gob")
	s, _ := paired(t, path, alicePN)
	if err := s.PutSession(t.Context(), "491700000002.0:1", bytes.Repeat([]byte{7}, 300)); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	damaged := map[string][]byte{
		"empty":  {},
		"sqlite": []byte("SQLite format 3\x00\x10\x00"),
	}
	for n := 0; n < len(good); n += max(1, len(good)/97) {
		damaged[fmt.Sprintf("truncated at %d", n)] = good[:n]
	}
	for _, at := range []int{40, len(good) / 2, len(good) - 1} {
		b := bytes.Clone(good)
		b[at] ^= 0x10
		damaged[fmt.Sprintf("bit flipped at %d", at)] = b
	}
	for name, data := range damaged {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "wa.gob")
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := devstore.Open(p, devstore.Options{})
			if !errors.Is(err, devstore.ErrCorrupt) || !strings.Contains(err.Error(), p) {
				t.Fatalf("Open = %v, want ErrCorrupt naming %s", err, p)
			}
			if after, _ := os.ReadFile(p); !bytes.Equal(after, data) {
				t.Error("the damaged file was changed")
			}
		})
	}
}

// Durable changes are in the file when the call returns; debounced ones
// arrive within the debounce, and at the latest on Close.
func TestDurableAndDebouncedWrites(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "wa.gob")
	s, err := devstore.Open(path, devstore.Options{NoSync: true, Debounce: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	carol := types.NewJID("491700000003", types.DefaultUserServer)
	if err := s.PutSession(ctx, "carol:1", []byte("ratchet")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PutPushName(ctx, carol, "Carol"); err != nil {
		t.Fatal(err)
	}
	crashed := open(t, crashCopy(t, path))
	if got, _ := crashed.GetSession(ctx, "carol:1"); string(got) != "ratchet" {
		t.Errorf("session after a crash: %q, want it written before PutSession returned", got)
	}
	if c, _ := crashed.GetContact(ctx, carol); c.Found {
		t.Error("the push name was written at once although its debounce is an hour")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if c, _ := open(t, crashCopy(t, path)).GetContact(ctx, carol); c.PushName != "Carol" {
		t.Errorf("push name after Close: %+v", c)
	}

	fast := open(t, filepath.Join(t.TempDir(), "fast.gob")) // 20 ms debounce
	if _, _, err := fast.PutPushName(ctx, carol, "Carol"); err != nil {
		t.Fatal(err)
	}
	channeltest.WaitFor(t, "the debounced push name in the file", 5*time.Second, func() bool {
		data, err := os.ReadFile(fast.Path())
		if err != nil {
			return false
		}
		cp := filepath.Join(t.TempDir(), "copy.gob")
		if err := os.WriteFile(cp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, _ := open(t, cp).GetContact(ctx, carol)
		return c.PushName == "Carol"
	})
}

// A process killed (SIGKILL) in the middle of a stream of durable writes
// leaves a whole file holding one of the last states, and no temporary
// files once the store is opened again.
func TestKilledWriterLeavesWholeFile(t *testing.T) {
	if path := os.Getenv("DEVSTORE_CRASH_CHILD"); path != "" {
		crashChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "wa.gob")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriterLeavesWholeFile$")
	cmd.Env = append(os.Environ(), "DEVSTORE_CRASH_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	last := 0
	for lines.Scan() && last < 200 {
		last, _ = strconv.Atoi(strings.TrimPrefix(lines.Text(), "saved "))
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if last < 200 {
		t.Fatalf("child stopped after %d writes", last)
	}
	s, err := devstore.Open(path, devstore.Options{})
	if err != nil {
		t.Fatalf("after the kill: %v", err)
	}
	got, _ := s.GetSession(t.Context(), "peer:1")
	n, err := strconv.Atoi(string(got))
	if err != nil || n < last {
		t.Errorf("session %q after the kill, want a counter ≥ %d (it was reported saved)", got, last)
	}
	if stale, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*")); len(stale) > 0 {
		t.Errorf("temporary files left: %v", stale)
	}
}

// crashChild writes a growing counter as a session until it is killed,
// reporting each write once it returned.
func crashChild(path string) {
	s, err := devstore.Open(path, devstore.Options{NoSync: true})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	filler := bytes.Repeat([]byte{1}, 64<<10) // a realistic file size
	if err := s.PutSenderKey(context.Background(), "group", "filler", filler); err != nil {
		os.Exit(1)
	}
	for i := 1; ; i++ {
		if err := s.PutSession(context.Background(), "peer:1", []byte(strconv.Itoa(i))); err != nil {
			fmt.Println("put:", err)
			os.Exit(1)
		}
		fmt.Printf("saved %d\n", i)
	}
}
