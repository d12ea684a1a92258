package providers_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/providers"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{name: "none", header: http.Header{}, want: 0},
		{name: "seconds", header: http.Header{"Retry-After": {"12"}}, want: 12 * time.Second},
		{name: "fractional", header: http.Header{"Retry-After": {"1.5"}}, want: 1500 * time.Millisecond},
		{name: "ms header wins", header: http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, want: 250 * time.Millisecond},
		{name: "http date", header: http.Header{"Retry-After": {now.Add(30 * time.Second).Format(http.TimeFormat)}}, want: 30 * time.Second},
		{name: "date in the past", header: http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, want: 0},
		{name: "negative", header: http.Header{"Retry-After": {"-3"}}, want: 0},
		{name: "garbage", header: http.Header{"Retry-After": {"soon"}}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := providers.ParseRetryAfter(tt.header, now); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHTTPError(t *testing.T) {
	const key = "sk-live-secret-123456"
	tests := []struct {
		status        int
		body          string
		wantTransient bool
		wantMessage   string
	}{
		{status: 500, body: "", wantTransient: true, wantMessage: "Internal Server Error"},
		{status: 529, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, wantTransient: true, wantMessage: "overloaded_error: Overloaded"},
		{status: 429, body: `{"error":{"message":"Rate limit reached"}}`, wantTransient: true, wantMessage: "Rate limit reached"},
		{status: 429, body: `{"error":{"message":"Insufficient balance"}}`, wantMessage: "Insufficient balance"},
		{status: 402, body: `{"message":"payment required"}`, wantMessage: "payment required"},
		{status: 425, wantTransient: true},
		{status: 404, body: `{"detail":"model not found"}`, wantMessage: "model not found"},
		{status: 401, body: "invalid key " + key, wantMessage: "invalid key [redacted]"},
		{status: 400, body: strings.Repeat("x", 2000), wantMessage: strings.Repeat("x", 500) + "…"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status, " ", tt.wantMessage), func(t *testing.T) {
			e := providers.HTTPError("p", tt.status, nil, []byte(tt.body), key)
			if e.Transient != tt.wantTransient || e.StatusCode != tt.status {
				t.Errorf("got status %d transient %v", e.StatusCode, e.Transient)
			}
			if tt.wantMessage != "" && e.Message != tt.wantMessage {
				t.Errorf("message = %q, want %q", e.Message, tt.wantMessage)
			}
			if strings.Contains(e.Error(), key) {
				t.Errorf("key leaked: %q", e.Error())
			}
		})
	}
}

func TestNetworkError(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "reset", err: &net.OpError{Op: "read", Err: syscall.ECONNRESET}, want: true},
		{name: "refused", err: fmt.Errorf("dial: %w", syscall.ECONNREFUSED), want: true},
		{name: "unexpected eof", err: io.ErrUnexpectedEOF, want: true},
		{name: "eof", err: fmt.Errorf("read body: %w", io.EOF), want: true},
		{name: "timeout", err: &net.DNSError{Err: "timeout", IsTimeout: true}, want: true},
		{name: "no such host", err: &net.DNSError{Err: "no such host", IsNotFound: true}, want: false},
		{name: "tls", err: errors.New("tls: failed to verify certificate: x509: certificate signed by unknown authority"), want: false},
		{name: "decode", err: errors.New("invalid character '<' looking for beginning of value"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := providers.NetworkError("p", tt.err)
			if e.Transient != tt.want {
				t.Errorf("transient = %v, want %v", e.Transient, tt.want)
			}
			if !errors.Is(e, tt.err) {
				t.Error("cause not wrapped")
			}
		})
	}
}

func TestCanceledIsNotTransient(t *testing.T) {
	e := providers.Canceled("p", context.Canceled)
	if providers.IsTransient(e) || !errors.Is(e, context.Canceled) {
		t.Errorf("got %+v", e)
	}
}
