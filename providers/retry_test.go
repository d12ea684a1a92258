package providers_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/openai"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// waits records the retry policy's waits instead of sleeping.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) wait(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.d = append(w.d, d)
	w.mu.Unlock()
	return ctx.Err()
}

func (w *waits) got() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.d...)
}

func backend(t *testing.T, srv *providertest.Server) providers.Provider {
	t.Helper()
	p, err := openai.New(openai.Options{Endpoint: providers.Endpoint{Name: "test", APIKey: "sk-retry-test-key", APIBase: srv.OpenAIBase(), HTTPClient: srv.Client()}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func retrying(t *testing.T, srv *providertest.Server, w *waits) *providers.Retry {
	return providers.NewRetry(backend(t, srv), providers.RetryPolicy{Wait: w.wait, Rand: func() float64 { return 0.5 }})
}

func textReq() providers.ChatRequest {
	return providers.ChatRequest{Model: "m", Messages: []providers.Message{{Role: "user", Content: "hi"}}}
}

func TestRetryRules(t *testing.T) {
	s := time.Second
	tests := []struct {
		name          string
		replies       []providertest.Reply
		wantAttempts  int
		wantWaits     []time.Duration
		wantErr       bool
		wantTransient bool
	}{
		{name: "5xx twice then ok", replies: []providertest.Reply{{Status: 500}, {Status: 502}, {Text: "ok"}},
			wantAttempts: 3, wantWaits: []time.Duration{s, 2 * s}},
		{name: "gives up after three retries", replies: []providertest.Reply{{Status: 503}, {Status: 503}, {Status: 503}, {Status: 503}},
			wantAttempts: 4, wantWaits: []time.Duration{s, 2 * s, 4 * s}, wantErr: true, wantTransient: true},
		{name: "408 and 409 are transient", replies: []providertest.Reply{{Status: 408}, {Status: 409}, {Text: "ok"}},
			wantAttempts: 3, wantWaits: []time.Duration{s, 2 * s}},
		{name: "429 honours Retry-After seconds", replies: []providertest.Reply{{Status: 429, RetryAfter: "7"}, {Text: "ok"}},
			wantAttempts: 2, wantWaits: []time.Duration{7 * s}},
		{name: "Retry-After is capped", replies: []providertest.Reply{{Status: 429, RetryAfter: "3600"}, {Text: "ok"}},
			wantAttempts: 2, wantWaits: []time.Duration{60 * s}},
		{name: "429 without hint uses backoff", replies: []providertest.Reply{{Status: 429}, {Text: "ok"}},
			wantAttempts: 2, wantWaits: []time.Duration{s}},
		{name: "429 quota is not retried", replies: []providertest.Reply{{Status: 429, Body: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota"}}`}},
			wantAttempts: 1, wantErr: true},
		{name: "429 insufficient credits is not retried", replies: []providertest.Reply{{Status: 429, Body: `{"error":{"message":"Insufficient credits"}}`}},
			wantAttempts: 1, wantErr: true},
		{name: "400 is not retried", replies: []providertest.Reply{{Status: 400}},
			wantAttempts: 1, wantErr: true},
		{name: "401 is not retried", replies: []providertest.Reply{{Status: 401}},
			wantAttempts: 1, wantErr: true},
		{name: "connection drop before any text is retried", replies: []providertest.Reply{{Text: "x", DropAfter: 1}, {Text: "ok"}},
			wantAttempts: 2, wantWaits: []time.Duration{s}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.New(t)
			srv.Push(tt.replies...)
			w := &waits{}
			r := retrying(t, srv, w)
			resp, err := r.Stream(t.Context(), textReq(), nil)
			if got := len(srv.Requests()); got != tt.wantAttempts {
				t.Errorf("attempts = %d, want %d", got, tt.wantAttempts)
			}
			if diff := cmp.Diff(tt.wantWaits, w.got()); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			if tt.wantErr {
				var pe *providers.Error
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v, want *providers.Error", err)
				}
				if pe.Transient != tt.wantTransient {
					t.Errorf("transient = %v, want %v", pe.Transient, tt.wantTransient)
				}
				return
			}
			if err != nil || resp.Content != "ok" {
				t.Fatalf("resp %+v err %v", resp, err)
			}
		})
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Status: 503, RetryAfter: time.Now().Add(10 * time.Second).UTC().Format(http.TimeFormat)}, providertest.Reply{Text: "ok"})
	w := &waits{}
	if _, err := retrying(t, srv, w).Chat(t.Context(), textReq()); err != nil {
		t.Fatal(err)
	}
	got := w.got()
	if len(got) != 1 || got[0] < 8*time.Second || got[0] > 10*time.Second {
		t.Errorf("waits = %v, want one of about 10s", got)
	}
}

func TestRetryJitter(t *testing.T) {
	for _, tt := range []struct {
		rand float64
		want time.Duration
	}{{0, 900 * time.Millisecond}, {0.5, time.Second}, {0.75, 1050 * time.Millisecond}} {
		srv := providertest.New(t)
		srv.Push(providertest.Reply{Status: 500}, providertest.Reply{Text: "ok"})
		w := &waits{}
		r := providers.NewRetry(backend(t, srv), providers.RetryPolicy{Wait: w.wait, Rand: func() float64 { return tt.rand }})
		if _, err := r.Chat(t.Context(), textReq()); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]time.Duration{tt.want}, w.got()); diff != "" {
			t.Errorf("rand %v: waits (-want +got):\n%s", tt.rand, diff)
		}
	}
}

func TestNoRetryAfterDeltasDelivered(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "half an answer, then", Chunks: 4, DropAfter: 3}, providertest.Reply{Text: "should not be asked"})
	w := &waits{}
	var shown strings.Builder
	_, err := retrying(t, srv, w).Stream(t.Context(), textReq(), func(d providers.Delta) { shown.WriteString(d.Content) })
	if err == nil || !providers.IsTransient(err) {
		t.Fatalf("err = %v, want the transient drop error", err)
	}
	if got := len(srv.Requests()); got != 1 {
		t.Errorf("attempts = %d, want 1: text was already shown", got)
	}
	if shown.Len() == 0 {
		t.Error("no delta was delivered before the drop")
	}
}

func TestRetryStripsImages(t *testing.T) {
	img := "data:image/png;base64,iVBORw0KGgo="
	req := providers.ChatRequest{Model: "m", Messages: []providers.Message{
		{Role: "user", Parts: []providers.ContentPart{providers.TextPart("what is this?"), providers.ImagePart(img)}},
	}}
	t.Run("400 retried once without images", func(t *testing.T) {
		srv := providertest.New(t)
		srv.Push(providertest.Reply{Status: 400, Body: `{"error":{"message":"this model does not support image input"}}`}, providertest.Reply{Text: "I cannot see it"})
		w := &waits{}
		resp, err := retrying(t, srv, w).Chat(t.Context(), req)
		if err != nil || resp.Content != "I cannot see it" {
			t.Fatalf("resp %+v err %v", resp, err)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("attempts = %d, want 2", len(reqs))
		}
		want := []any{
			map[string]any{"type": "text", "text": "what is this?"},
			map[string]any{"type": "text", "text": providers.ImageOmittedNote},
		}
		if diff := cmp.Diff(want, reqs[1].Messages()[0]["content"]); diff != "" {
			t.Errorf("second attempt content (-want +got):\n%s", diff)
		}
		if req.Messages[0].Parts[1].Type != "image_url" {
			t.Error("caller's request was modified")
		}
		if len(w.got()) != 0 {
			t.Errorf("waited %v before the image retry", w.got())
		}
	})
	t.Run("still failing: one strip only", func(t *testing.T) {
		srv := providertest.New(t)
		srv.Push(providertest.Reply{Status: 400}, providertest.Reply{Status: 400})
		_, err := retrying(t, srv, &waits{}).Chat(t.Context(), req)
		if err == nil {
			t.Fatal("want error")
		}
		if got := len(srv.Requests()); got != 2 {
			t.Errorf("attempts = %d, want 2", got)
		}
	})
	t.Run("auth errors are not image problems", func(t *testing.T) {
		srv := providertest.New(t)
		srv.Push(providertest.Reply{Status: 401})
		if _, err := retrying(t, srv, &waits{}).Chat(t.Context(), req); err == nil {
			t.Fatal("want error")
		}
		if got := len(srv.Requests()); got != 1 {
			t.Errorf("attempts = %d, want 1", got)
		}
	})
	t.Run("no images, no strip retry", func(t *testing.T) {
		srv := providertest.New(t)
		srv.Push(providertest.Reply{Status: 400})
		if _, err := retrying(t, srv, &waits{}).Chat(t.Context(), textReq()); err == nil {
			t.Fatal("want error")
		}
		if got := len(srv.Requests()); got != 1 {
			t.Errorf("attempts = %d, want 1", got)
		}
	})
}

func TestRetryStopsWhenContextEnds(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Status: 500}, providertest.Reply{Text: "too late"})
	ctx, cancel := context.WithCancel(t.Context())
	r := providers.NewRetry(backend(t, srv), providers.RetryPolicy{Wait: func(ctx context.Context, d time.Duration) error {
		cancel()
		return ctx.Err()
	}})
	if _, err := r.Chat(ctx, textReq()); err == nil {
		t.Fatal("want error")
	}
	if got := len(srv.Requests()); got != 1 {
		t.Errorf("attempts = %d, want 1", got)
	}
}

func TestRetryRealTimerHonoursContext(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Status: 500})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := providers.NewRetry(backend(t, srv), providers.RetryPolicy{}).Chat(ctx, textReq())
	if err == nil {
		t.Fatal("want error")
	}
	if elapsed := time.Since(start); elapsed > 900*time.Millisecond {
		t.Errorf("returned after %s; the 1s backoff ignored the context", elapsed)
	}
}
