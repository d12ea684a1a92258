package media

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
)

func TestCollector(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n0000")
	fetched := 0
	ok := func(data []byte) func(context.Context) ([]byte, error) {
		return func(context.Context) ([]byte, error) { fetched++; return data, nil }
	}
	fail := func(err error) func(context.Context) ([]byte, error) {
		return func(context.Context) ([]byte, error) { fetched++; return nil, err }
	}
	items := []Item{
		{Name: "cat.png", Fetch: ok(png)},
		{Name: "big.iso", Fetch: fail(ErrTooLarge)},
		{Name: "gone.txt", Fetch: fail(errors.New("HTTP 404 token=s3cret"))},
		{Fetch: ok([]byte("plain words"))},
	}
	dir := t.TempDir()
	var logged strings.Builder
	c := Collector{Dir: dir, Max: 1 << 20, Platform: "x", Log: testLogger(&logged), Redact: func(s string) string { return strings.ReplaceAll(s, "s3cret", "***") }}

	m := bus.Inbound{MessageID: "../m1", Content: "look"}
	c.Collect(context.Background(), &m, true, items)
	if len(m.Media) != 2 || m.Media[0].MIMEType != "image/png" || m.Media[0].Size != int64(len(png)) {
		t.Fatalf("media %+v", m.Media)
	}
	for _, md := range m.Media {
		if !strings.HasPrefix(md.Path, dir+string(os.PathSeparator)) {
			t.Fatalf("saved outside the folder: %s", md.Path)
		}
	}
	want := "look\n[attachment big.iso: too large to download (over the limit of 1.0 MB)]\n[attachment gone.txt: download failed]"
	if m.Content != want {
		t.Fatalf("content %q\nwant %q", m.Content, want)
	}
	if strings.Contains(logged.String(), "s3cret") || !strings.Contains(logged.String(), "gone.txt") {
		t.Fatalf("log %q", logged.String())
	}

	fetched = 0
	m = bus.Inbound{MessageID: "m2"}
	c.Collect(context.Background(), &m, false, items)
	if fetched != 0 || len(m.Media) != 0 || strings.Count(m.Content, "sender not allowed") != 4 {
		t.Fatalf("stranger: %d fetches, %+v", fetched, m)
	}

	m = bus.Inbound{MessageID: "m3"}
	Collector{}.Collect(context.Background(), &m, true, []Item{{Name: "a.jpg", URL: "https://cdn/a.jpg", Fetch: ok(png)}, {Name: "b", Fetch: ok(png)}})
	if fetched != 0 || len(m.Media) != 1 || m.Media[0].URL != "https://cdn/a.jpg" || !strings.Contains(m.Content, "[attachment b: not downloaded, no media folder]") {
		t.Fatalf("no folder: %d fetches, %+v", fetched, m)
	}
}

func testLogger(w *strings.Builder) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, nil))
}

func TestTakeURLs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("bytes of " + r.URL.Path))
	}))
	defer srv.Close()
	m := &bus.Inbound{Media: []bus.Media{{Name: "a.txt", MIMEType: "text/plain", URL: srv.URL + "/a"}, {Name: "b.txt", URL: srv.URL + "/b"}}}
	items := TakeURLs(m, srv.Client(), 1<<10)
	if m.Media != nil {
		t.Errorf("m.Media = %v, want it cleared for Collect", m.Media)
	}
	if len(items) != 2 || items[0].Name != "a.txt" || items[0].MIMEType != "text/plain" || items[1].URL != srv.URL+"/b" {
		t.Fatalf("items = %+v", items)
	}
	for i, want := range []string{"bytes of /a", "bytes of /b"} {
		got, err := items[i].Fetch(t.Context())
		if err != nil || string(got) != want {
			t.Errorf("item %d: Fetch = %q, %v; want %q (each item fetches its own URL)", i, got, err, want)
		}
	}
	if _, err := TakeURLs(&bus.Inbound{Media: []bus.Media{{URL: srv.URL + "/big"}}}, srv.Client(), 4)[0].Fetch(t.Context()); err == nil {
		t.Error("Fetch over the limit: want an error")
	}
}
