package media

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

func TestFetch(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			if r.Header.Get("Authorization") != "Bearer t" {
				http.Error(w, "no", http.StatusUnauthorized)
				return
			}
			w.Write(body)
		case "/chunked": // no Content-Length: the limit is found while reading
			w.(http.Flusher).Flush()
			for range 10 {
				w.Write(body)
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	auth := http.Header{"Authorization": {"Bearer t"}}

	got, err := Fetch(ctx, srv.Client(), srv.URL+"/ok", auth, 1000)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("exact limit: %d bytes, %v", len(got), err)
	}
	if _, err := Fetch(ctx, srv.Client(), srv.URL+"/ok", auth, 999); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the limit (Content-Length): %v", err)
	}
	if _, err := Fetch(ctx, srv.Client(), srv.URL+"/chunked", nil, 5000); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the limit (streamed): %v", err)
	}
	var se *StatusError
	if _, err := Fetch(ctx, srv.Client(), srv.URL+"/ok", nil, 1000); !errors.As(err, &se) || se.Code != 401 {
		t.Fatalf("unauthorised: %v", err)
	}
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{
		"photo.jpg":         "photo.jpg",
		"../../etc/passwd":  ".._.._etc_passwd",
		".jpg":              ".jpg",
		"rapport final.pdf": "rapport_final.pdf",
		"a/b\\c":            "a_b_c",
		"日本.png":            "__.png",
		"$(rm -rf ~).txt":   "__rm_-rf___.txt",
	} {
		if got := SafeName(in); got != want {
			t.Errorf("SafeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSave(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "media", "discord")
	file, err := Save(dir, "../evil.txt", []byte("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(file) != dir || filepath.Base(file) != "_evil.txt" {
		t.Fatalf("saved to %s, want inside %s", file, dir)
	}
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", st.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "_evil.txt" {
		t.Fatalf("temporary files left: %v", entries)
	}
	for _, bad := range []string{"...", "..", "."} {
		if _, err := Save(dir, bad, nil); err == nil {
			t.Fatalf("Save(%q) was accepted", bad)
		}
	}
	if file, err := Save(dir, ".bashrc", nil); err != nil || filepath.Base(file) != "bashrc" {
		t.Fatalf("hidden name: %s, %v", file, err)
	}
}

func TestExt(t *testing.T) {
	if e := Ext("a.pdf", "x/y.bin", "image/png"); e != ".pdf" {
		t.Fatal(e)
	}
	if e := Ext("", "voice/file_3.oga", "audio/ogg"); e != ".oga" {
		t.Fatal(e)
	}
	if e := Ext("", "", "image/png"); e != ".png" {
		t.Fatal(e)
	}
	if e := Ext("", "", ""); e != "" {
		t.Fatal(e)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{900: "900 bytes", 12 << 10: "12.0 KB", 25 << 20: "25.0 MB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestTooLarge(t *testing.T) {
	for _, c := range []struct {
		label       string
		size, limit int64
		want        string
	}{
		{"attachment a.iso", 3 << 20, 1 << 20, "[attachment a.iso: too large to download (3.0 MB, limit 1.0 MB)]"},
		{"voice", 0, 1 << 20, "[voice: too large to download (over the limit of 1.0 MB)]"},
		{"file b.bin", -1, 2048, "[file b.bin: too large to download (over the limit of 2.0 KB)]"},
	} {
		if got := TooLarge(c.label, c.size, c.limit); got != c.want {
			t.Errorf("TooLarge(%q, %d, %d) = %q, want %q", c.label, c.size, c.limit, got, c.want)
		}
	}
}
