package wire_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/internal/calltimer"
	"github.com/nanobot-go/nanobot/providers/internal/wire"
)

func TestSSEReader(t *testing.T) {
	body := ": keep-alive comment\r\n" +
		"event: one\r\ndata: {\"a\":1}\r\n\r\n" +
		"\n\n" + // stray blank lines are no event
		"data:no-space\n" +
		"data:  two spaces\n" +
		"id: 7\n\n" +
		"event: cut\ndata: {\"cut\":" // no blank line: dropped
	var got []string
	for data, err := range wire.NewSSEReader(strings.NewReader(body)).Events() {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(data))
	}
	want := []string{`{"a":1}`, "no-space\n two spaces"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestSSEReaderReadError(t *testing.T) {
	boom := errors.New("connection reset")
	body := io.MultiReader(strings.NewReader("data: one\n\ndata: cut"), iotest.ErrReader(boom))
	var got []string
	var errs []error
	for data, err := range wire.NewSSEReader(body).Events() {
		got = append(got, string(data))
		errs = append(errs, err)
	}
	if diff := cmp.Diff([]string{"one", ""}, got); diff != "" || len(errs) != 2 || errs[0] != nil || !errors.Is(errs[1], boom) {
		t.Errorf("events %q errors %v, want one event then the read error", got, errs)
	}
}

func TestEncode(t *testing.T) {
	body := struct {
		Model  string `json:"model"`
		Max    int    `json:"max_tokens"`
		Stream bool   `json:"stream,omitempty"`
	}{"m", 10, true}
	tests := []struct {
		name   string
		extra  map[string]any
		stream bool
		want   string
	}{
		{name: "no extra", stream: true, want: `{"model":"m","max_tokens":10,"stream":true}`},
		{name: "extra replaces, stream stays", stream: true, extra: map[string]any{"max_tokens": 5, "stream": false, "a.b": 1},
			want: `{"a.b":1,"max_tokens":5,"model":"m","stream":true}`},
		{name: "extra may set stream off a plain call", extra: map[string]any{"stream": false},
			want: `{"max_tokens":10,"model":"m","stream":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wire.Encode(body, tt.extra, tt.stream)
			if err != nil || string(got) != tt.want {
				t.Errorf("got %s, %v; want %s", got, err, tt.want)
			}
		})
	}
	if _, err := wire.Encode(body, map[string]any{"bad": func() {}}, false); err == nil || !strings.Contains(err.Error(), "extraBody.bad") {
		t.Errorf("err = %v, want one naming extraBody.bad", err)
	}
}

func TestPostAndCall(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test") != "yes" || r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Accept") != "application/json" {
			t.Errorf("headers %v", r.Header)
		}
		if r.URL.Path == "/fail" {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, strings.Repeat("e", wire.MaxErrorBody+10))
			return
		}
		_, _ = io.WriteString(w, `{"n":"not a number","s":"ok"}`)
	}))
	defer srv.Close()
	h := http.Header{"X-Test": {"yes"}}

	var out struct {
		N int    `json:"n"`
		S string `json:"s"`
	}
	if err := wire.Call(t.Context(), srv.Client(), srv.URL+"/ok", h, []byte(`{}`), &out); err != nil || out.S != "ok" {
		t.Errorf("Call: %+v, %v; want the string field despite the mistyped one", out, err)
	}
	err := wire.Call(t.Context(), srv.Client(), srv.URL+"/fail", h, []byte(`{}`), &out)
	var se *wire.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want *StatusError", err)
	}
	if se.Code != 429 || se.Header.Get("Retry-After") != "3" || len(se.Body) != wire.MaxErrorBody {
		t.Errorf("status %d retry-after %q body %d bytes", se.Code, se.Header.Get("Retry-After"), len(se.Body))
	}
}

func TestClassify(t *testing.T) {
	const key = "sk-secret-0123456789"
	tests := []struct {
		name          string
		err           error
		wantStatus    int
		wantTransient bool
		wantRetryMs   int64
	}{
		{name: "429", err: &wire.StatusError{Code: 429, Header: http.Header{"Retry-After": {"2"}}, Body: []byte(`{"error":{"message":"slow down"}}`)},
			wantStatus: 429, wantTransient: true, wantRetryMs: 2000},
		{name: "401", err: &wire.StatusError{Code: 401, Body: []byte(`{"error":{"message":"bad key ` + key + `"}}`)}, wantStatus: 401},
		{name: "event read as 503", err: &wire.EventError{Data: []byte(`{"status":503}`)}, wantTransient: true},
		{name: "event read as 400", err: &wire.EventError{Data: []byte(`{"status":400}`)}},
		{name: "network", err: fmt.Errorf("read: %w", io.ErrUnexpectedEOF), wantTransient: true},
	}
	eventStatus := func(data []byte) int {
		var ev struct{ Status int }
		_ = json.Unmarshal(data, &ev)
		return ev.Status
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timer := calltimer.Start(t.Context(), 0, 0)
			defer timer.Stop()
			var pe *providers.Error
			if !errors.As(wire.Classify(timer, "p", key, tt.err, eventStatus), &pe) {
				t.Fatal("not a *providers.Error")
			}
			if pe.StatusCode != tt.wantStatus || pe.Transient != tt.wantTransient || pe.RetryAfter != tt.wantRetryMs {
				t.Errorf("status %d transient %v retry %d, want %d %v %d", pe.StatusCode, pe.Transient, pe.RetryAfter,
					tt.wantStatus, tt.wantTransient, tt.wantRetryMs)
			}
			if strings.Contains(pe.Error(), key) {
				t.Errorf("key in %q", pe)
			}
		})
	}
	t.Run("canceled first", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		timer := calltimer.Start(ctx, 0, 0)
		defer timer.Stop()
		cancel()
		err := wire.Classify(timer, "p", key, &wire.StatusError{Code: 500}, eventStatus)
		if !errors.Is(err, context.Canceled) || providers.IsTransient(err) {
			t.Errorf("err = %v, want the non-transient cancellation", err)
		}
	})
}
