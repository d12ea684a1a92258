package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestKeyEncoding(t *testing.T) {
	tests := []struct {
		key      string
		wantStem string // "" = only check the properties
	}{
		{"telegram:123", "telegram%3A123"},
		{"slack:C1:thread:123.456", "slack%3AC1%3Athread%3A123.456"},
		{"..", "%2E."},
		{".", "%2E"},
		{"../../etc/passwd", "%2E.%2F..%2Fetc%2Fpasswd"},
		{"a/b\\c", "a%2Fb%5Cc"},
		{"100%", "100%25"},
		{"with space", "with%20space"},
		{"~@", "%7E%40"},
		{"x.jsonl", "x.jsonl"},
		{"日本:チャット", ""},
		{"emoji:🙂", ""},
		{"nul\x00byte\xff", ""},
		{strings.Repeat("a", 300), ""},
		{strings.Repeat("長", 300), ""},
		{strings.Repeat("ab", 79) + ":" + strings.Repeat("c", 100), ""}, // escape at the cut
	}
	for _, tt := range tests {
		name := tt.key
		if len(name) > 40 {
			name = name[:40] + "..."
		}
		t.Run(name, func(t *testing.T) {
			stem := encodeKey(tt.key)
			if tt.wantStem != "" && stem != tt.wantStem {
				t.Errorf("encodeKey(%q) = %q, want %q", tt.key, stem, tt.wantStem)
			}
			if strings.ContainsAny(stem, `/\`+"\x00") || strings.HasPrefix(stem, ".") || filepath.Base(stem) != stem {
				t.Errorf("unsafe stem %q", stem)
			}
			if strings.ContainsAny(stem, archiveSep) {
				t.Errorf("stem %q contains the archive separator", stem)
			}
			if n := len(stem + archiveSep + "20260101T000000.000000000Z-99" + fileExt); n > 255 {
				t.Errorf("archived name is %d bytes, over 255", n)
			}
			if !utf8.ValidString(stem) {
				t.Errorf("stem %q is not valid UTF-8", stem)
			}
			got, ok := decodeKey(stem)
			hashed := strings.Contains(stem, hashSep)
			switch {
			case hashed && ok:
				t.Errorf("decodeKey(%q) succeeded on a hashed stem", stem)
			case !hashed && (!ok || got != tt.key):
				t.Errorf("decodeKey(encodeKey(%q)) = %q, %v", tt.key, got, ok)
			}
		})
	}
}

func TestKeyEncodingDistinct(t *testing.T) {
	keys := []string{"a:b", "a_b", "a%3Ab", "a.b", ".ab", "%2Eab", strings.Repeat("x", 300), strings.Repeat("x", 301)}
	seen := map[string]string{}
	for _, k := range keys {
		stem := encodeKey(k)
		if prev, dup := seen[stem]; dup {
			t.Errorf("keys %q and %q share stem %q", prev, k, stem)
		}
		seen[stem] = k
	}
}

func TestDecodeKeyRejects(t *testing.T) {
	for _, stem := range []string{"", "%", "%4", "%zz", "%4a", "a b", "a/b", ".hidden", "k@2026", "k~abc"} {
		if k, ok := decodeKey(stem); ok {
			t.Errorf("decodeKey(%q) = %q, true; want false", stem, k)
		}
	}
}

// TestAwkwardKeysEndToEnd stores sessions under keys that would escape the
// folder or collide if encoded naively, and reads them back.
func TestAwkwardKeysEndToEnd(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{NoSync: true})
	keys := []string{"..", ".", "../escape", "/abs/path", "日本:チャット", "slack:C1:thread:1", "a:b", "a_b", strings.Repeat("長", 120)}
	for _, k := range keys {
		ts.append(t, ts.load(t, k), u("I am "+k))
	}
	entries, err := os.ReadDir(filepath.Dir(ts.dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("files escaped the session folder: %v", entries)
	}
	r := ts.reopen(t)
	for _, k := range keys {
		s := r.load(t, k)
		if len(s.Messages) != 1 || s.Messages[0].Content != "I am "+k {
			t.Errorf("key %q read back %+v", k, s.Messages)
		}
	}
	infos, err := r.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, in := range infos {
		got[in.Key] = true
	}
	for _, k := range keys {
		if !got[k] {
			t.Errorf("List misses %q", k)
		}
	}
	if len(infos) != len(keys) {
		t.Errorf("List has %d entries, want %d", len(infos), len(keys))
	}
}
