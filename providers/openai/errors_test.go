package openai_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/openai"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

func TestErrorClassification(t *testing.T) {
	tests := []struct {
		name          string
		reply         providertest.Reply
		wantStatus    int
		wantTransient bool
		wantRetryMs   int64
		wantInMessage string
	}{
		{name: "rate limited", reply: providertest.Reply{Status: 429, RetryAfter: "2"}, wantStatus: 429, wantTransient: true, wantRetryMs: 2000},
		{name: "quota", reply: providertest.Reply{Status: 429, Body: `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota"}}`},
			wantStatus: 429, wantInMessage: "quota"},
		{name: "server error text body", reply: providertest.Reply{Status: 502, Body: "bad gateway from proxy"}, wantStatus: 502, wantTransient: true, wantInMessage: "bad gateway from proxy"},
		{name: "bad request", reply: providertest.Reply{Status: 400, Body: `{"error":{"message":"context too long"}}`}, wantStatus: 400, wantInMessage: "context too long"},
		{name: "auth, key redacted", reply: providertest.Reply{Status: 401, Body: `{"error":{"message":"Incorrect API key provided: ` + testKey + `"}}`},
			wantStatus: 401, wantInMessage: "[redacted]"},
		{name: "timeout status", reply: providertest.Reply{Status: 408}, wantStatus: 408, wantTransient: true},
		{name: "conflict", reply: providertest.Reply{Status: 409}, wantStatus: 409, wantTransient: true},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(tt.name+map[bool]string{false: "/chat", true: "/stream"}[stream], func(t *testing.T) {
				srv := providertest.New(t)
				srv.Push(tt.reply)
				p := newProvider(t, srv)
				var err error
				if stream {
					_, err = p.Stream(t.Context(), userReq("x"), nil)
				} else {
					_, err = p.Chat(t.Context(), userReq("x"))
				}
				var pe *providers.Error
				if !errors.As(err, &pe) {
					t.Fatalf("error %v (%T) is not *providers.Error", err, err)
				}
				if pe.StatusCode != tt.wantStatus || pe.Transient != tt.wantTransient || pe.RetryAfter != tt.wantRetryMs {
					t.Errorf("got status %d transient %v retryAfter %d, want %d %v %d",
						pe.StatusCode, pe.Transient, pe.RetryAfter, tt.wantStatus, tt.wantTransient, tt.wantRetryMs)
				}
				if pe.Provider != "testai" {
					t.Errorf("provider = %q", pe.Provider)
				}
				if !strings.Contains(pe.Error(), tt.wantInMessage) {
					t.Errorf("error %q does not contain %q", pe.Error(), tt.wantInMessage)
				}
				if strings.Contains(pe.Error(), testKey) {
					t.Errorf("error leaks the API key: %q", pe.Error())
				}
			})
		}
	}
}

func TestStreamIdleTimeout(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "this answer stalls halfway", Chunks: 4, StallAfter: 3})
	p := newProvider(t, srv, func(o *openai.Options) { o.StreamIdleTimeout = time.Second }) // long enough for the first chunks on a loaded machine
	var got strings.Builder
	start := time.Now()
	_, err := p.Stream(t.Context(), userReq("x"), func(d providers.Delta) { got.WriteString(d.Content) })
	if !errors.Is(err, providers.ErrStreamIdle) || !providers.IsTransient(err) {
		t.Fatalf("err = %v, want transient ErrStreamIdle", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("idle timeout took %s", elapsed)
	}
	if got.Len() == 0 {
		t.Error("no delta before the stall")
	}
}

func TestStreamLongAnswerOutlivesRequestTimeout(t *testing.T) {
	// The request timeout bounds the wait for the first event only.
	srv := providertest.New(t)
	// About 8 x 40ms of streaming against a 150ms request timeout.
	srv.Push(providertest.Reply{Text: "slow but steady", Chunks: 5, EventDelay: 40 * time.Millisecond})
	p := newProvider(t, srv, func(o *openai.Options) {
		o.RequestTimeout = 150 * time.Millisecond
		o.StreamIdleTimeout = 5 * time.Second
	})
	start := time.Now()
	resp, err := p.Stream(t.Context(), userReq("x"), nil)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if elapsed := time.Since(start); elapsed < 150*time.Millisecond {
		t.Fatalf("stream took %s; the test needs it to outlast the request timeout", elapsed)
	}
	if resp.Content != "slow but steady" {
		t.Errorf("content = %q", resp.Content)
	}
}

func TestRequestTimeoutSlowServer(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "chat", true: "stream"}[stream], func(t *testing.T) {
			srv := providertest.New(t)
			srv.Push(providertest.Reply{Text: "late", Delay: time.Minute})
			p := newProvider(t, srv, func(o *openai.Options) { o.RequestTimeout = 100 * time.Millisecond })
			var err error
			if stream {
				_, err = p.Stream(t.Context(), userReq("x"), nil)
			} else {
				_, err = p.Chat(t.Context(), userReq("x"))
			}
			if !errors.Is(err, providers.ErrRequestTimeout) || !providers.IsTransient(err) {
				t.Fatalf("err = %v, want transient ErrRequestTimeout", err)
			}
		})
	}
}

func TestCancelMidStream(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "never finished", Chunks: 4, StallAfter: 2})
	p := newProvider(t, srv)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, err := p.Stream(ctx, userReq("x"), func(providers.Delta) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if providers.IsTransient(err) {
		t.Error("cancellation reported as transient")
	}
}

func TestConnectionDropMidStream(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "cut off in the middle", Chunks: 4, DropAfter: 2})
	p := newProvider(t, srv)
	_, err := p.Stream(t.Context(), userReq("x"), nil)
	if err == nil || !providers.IsTransient(err) {
		t.Fatalf("err = %v, want a transient error", err)
	}
}

func TestInBandStreamError(t *testing.T) {
	tests := []struct {
		name          string
		event         string
		wantTransient bool
	}{
		{name: "server error", wantTransient: true},
		{name: "bad request code", event: `{"error":{"message":"context length exceeded","code":400}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.New(t)
			srv.Push(providertest.Reply{Text: "partial answer", ErrorAfter: 2, ErrorEvent: tt.event})
			p := newProvider(t, srv)
			_, err := p.Stream(t.Context(), userReq("x"), nil)
			var pe *providers.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v (%T), want *providers.Error", err, err)
			}
			if pe.Transient != tt.wantTransient {
				t.Errorf("transient = %v, want %v (%v)", pe.Transient, tt.wantTransient, err)
			}
		})
	}
}
