package memory

import (
	"errors"
	"os"
	"testing"
	"time"
)

// TestMemoryVersions: each rewrite keeps what it replaces; a kept version
// can be put back, and the restore is undoable the same way; only the
// newest keepVersions stay; ids that are not versions are refused.
func TestMemoryVersions(t *testing.T) {
	c := newConsolidator(t, testOptions(t.TempDir(), &fakeProvider{}, newStore(t, t.TempDir())))
	f := c.files
	at := testNow
	write := func(text string) {
		t.Helper()
		if err := f.keepVersion(at); err != nil {
			t.Fatal(err)
		}
		if err := f.writeMemory(text); err != nil {
			t.Fatal(err)
		}
		at = at.Add(time.Minute)
	}
	write("v1: the cat is Tom")
	if vs, _ := c.Versions(); len(vs) != 0 {
		t.Fatalf("%d versions before any rewrite", len(vs))
	}
	write("v2: the cat is lost") // a bad consolidation
	vs, err := c.Versions()
	if err != nil || len(vs) != 1 || vs[0].Bytes != int64(len("v1: the cat is Tom")) {
		t.Fatalf("versions %+v, %v", vs, err)
	}
	c.opts.Now = func() time.Time { return at }
	if err := c.Restore(vs[0].ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.readMemory(); got != "v1: the cat is Tom" {
		t.Errorf("restored MEMORY.md = %q", got)
	}
	vs, _ = c.Versions()
	if len(vs) != 2 {
		t.Fatalf("after the restore %d versions, want 2 (the restore keeps what it replaced)", len(vs))
	}
	if data, _ := os.ReadFile(f.versionPath(vs[0].ID)); string(data) != "v2: the cat is lost" {
		t.Errorf("newest version %q, want what the restore replaced", data)
	}
	for _, bad := range []string{"", "nope", "../MEMORY", "20260301T120000.000Z/../x"} {
		if err := c.Restore(bad); !errors.Is(err, ErrNoVersion) {
			t.Errorf("Restore(%q) = %v, want ErrNoVersion", bad, err)
		}
	}
	for i := range keepVersions + 5 {
		write("version " + string(rune('a'+i%26)))
	}
	if vs, _ := c.Versions(); len(vs) != keepVersions {
		t.Errorf("%d versions kept, want %d", len(vs), keepVersions)
	}
}
