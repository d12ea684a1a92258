package providers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sentinel causes carried in Error.Err, for callers that branch on them.
var (
	// ErrStreamIdle: a stream delivered no event for longer than the idle timeout.
	ErrStreamIdle = errors.New("stream idle timeout")
	// ErrRequestTimeout: the call (or a stream's wait for its first event)
	// took longer than the request timeout.
	ErrRequestTimeout = errors.New("request timeout")
	// ErrStreamTruncated: the stream ended before the vendor's end-of-message marker.
	ErrStreamTruncated = errors.New("stream ended early")
)

// maxMessageLen bounds the vendor message kept in an Error; bodies can be
// whole HTML pages from a proxy.
const maxMessageLen = 500

// HTTPError classifies an HTTP error response. body is the response body as
// received; the vendor's message is extracted from the usual JSON shapes
// ({"error":{"message":...}}, {"message":...}) and every secret is redacted
// from it.
//
// Transient: 408, 409, 425, 429 (unless the body says the quota or credits
// are exhausted, which waiting will not fix) and every 5xx.
func HTTPError(provider string, status int, header http.Header, body []byte, secrets ...string) *Error {
	msg := vendorMessage(body)
	if msg == "" {
		msg = http.StatusText(status)
	}
	msg = Redact(truncate(msg, maxMessageLen), secrets...)
	e := &Error{Provider: provider, StatusCode: status, Message: msg}
	switch {
	case status == http.StatusTooManyRequests:
		e.Transient = !isQuotaExhausted(string(body))
	case status == http.StatusRequestTimeout, status == http.StatusConflict, status == http.StatusTooEarly:
		e.Transient = true
	case status >= 500:
		e.Transient = true
	}
	if e.Transient {
		e.RetryAfter = ParseRetryAfter(header, time.Now()).Milliseconds()
	}
	return e
}

// NetworkError classifies a failure that produced no HTTP response (or broke
// the body mid-way): connection resets, refused connections, unexpected EOF
// and timeouts are transient; DNS failures, TLS certificate problems and
// anything unrecognised are not.
func NetworkError(provider string, err error, secrets ...string) *Error {
	return &Error{
		Provider:  provider,
		Message:   Redact(truncate(err.Error(), maxMessageLen), secrets...),
		Transient: isTransientNetwork(err),
		Err:       err,
	}
}

func isTransientNetwork(err error) bool {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return dnsErr.IsTimeout || dnsErr.IsTemporary
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return true
	}
	s := strings.ToLower(err.Error())
	for _, frag := range []string{"connection reset", "broken pipe", "unexpected eof", "http2: server sent goaway", "stream error", "server closed idle connection"} {
		if strings.Contains(s, frag) {
			return true
		}
	}
	return false
}

// ParseRetryAfter reads the Retry-After hint of a response: "retry-after-ms"
// (OpenAI), then "Retry-After" as seconds or as an HTTP date relative to now.
// It returns 0 when there is no usable hint. The retry policy caps it.
func ParseRetryAfter(header http.Header, now time.Time) time.Duration {
	if header == nil {
		return 0
	}
	if v := strings.TrimSpace(header.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(header.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// quotaMarkers are phrases vendors use on a 429 that will not clear by
// waiting (OpenAI insufficient_quota, OpenRouter credits, DeepSeek balance).
var quotaMarkers = []string{
	"quota", "billing", "insufficient credits", "insufficient_credits",
	"insufficient balance", "insufficient_balance", "credit balance", "payment required",
}

func isQuotaExhausted(body string) bool {
	b := strings.ToLower(body)
	for _, m := range quotaMarkers {
		if strings.Contains(b, m) {
			return true
		}
	}
	return false
}

// vendorMessage pulls a human message out of an error body.
func vendorMessage(body []byte) string {
	body = []byte(strings.TrimSpace(string(body)))
	if len(body) == 0 {
		return ""
	}
	var shaped struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
	}
	if json.Unmarshal(body, &shaped) != nil {
		return string(body)
	}
	if len(shaped.Error) > 0 {
		var inner struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		}
		if json.Unmarshal(shaped.Error, &inner) == nil && inner.Message != "" {
			if inner.Type != "" && !strings.Contains(inner.Message, inner.Type) {
				return inner.Type + ": " + inner.Message
			}
			return inner.Message
		}
		var s string
		if json.Unmarshal(shaped.Error, &s) == nil && s != "" {
			return s
		}
	}
	if shaped.Message != "" {
		return shaped.Message
	}
	if shaped.Detail != "" {
		return shaped.Detail
	}
	return string(body)
}

// Redact replaces every occurrence of each non-trivial secret in s. Secrets
// shorter than 6 characters are ignored: they are not real keys and
// replacing them would mangle ordinary text.
func Redact(s string, secrets ...string) string {
	for _, secret := range secrets {
		if len(secret) < 6 {
			continue
		}
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return s[:cut] + "…"
}

// Canceled wraps a context error of the caller as an *Error that is never
// retried; errors.Is(err, context.Canceled) keeps working through it.
func Canceled(provider string, ctxErr error) *Error {
	return &Error{Provider: provider, Message: fmt.Sprintf("request canceled: %v", ctxErr), Err: ctxErr}
}

// SignInError says a subscription sign-in provider cannot be called until
// the user signs in (again): never signed in, signed out, or the sign-in
// was revoked or expired. It is never transient: retrying cannot help, and
// the agent answers with Error's one line instead of the vendor's 401s.
type SignInError struct {
	// Provider is the registry name ("github-copilot").
	Provider string
	// Reason says what happened, without credentials ("signed out",
	// "the refresh token was rejected").
	Reason string
}

func (e *SignInError) Error() string {
	return fmt.Sprintf("%s: %s — run `nanobot provider login %s`", e.Provider, e.Reason, e.Provider)
}
