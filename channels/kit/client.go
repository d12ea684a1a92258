package kit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/internal/redact"
)

// Client calls a platform's JSON API: it encodes the request, adds the
// credentials, checks the HTTP status and the platform's error envelope,
// and decodes the answer. Errors never carry credentials or query strings.
type Client struct {
	// Base is the API root ("https://api.dingtalk.com"); paths are
	// appended to it. A path that is a full URL is used as is.
	Base string
	// HTTP is the client used (default: one with a 30 s timeout).
	HTTP *http.Client
	// Auth adds credentials to a request (a token header); nil adds none.
	Auth func(ctx context.Context, req *http.Request) error
	// Check finds the platform's error in a 2xx answer (see Envelope); nil
	// accepts every 2xx answer.
	Check func(body []byte) error
	// Redact cleans error text.
	Redact *redact.Redactor
	// MaxBody caps an answer (default 16 MiB).
	MaxBody int64
}

// APIError is an error answer from the platform: a non-2xx status, or a
// 2xx whose envelope carries an error code.
type APIError struct {
	// Status is the HTTP status.
	Status int
	// Code and Message come from the envelope when there is one.
	Code    string
	Message string
	// Op names the call ("POST /v1.0/robot/oToMessages/batchSend").
	Op string
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	b.WriteString(": ")
	if e.Status != 0 && e.Status != http.StatusOK {
		fmt.Fprintf(&b, "HTTP %d", e.Status)
	}
	if e.Code != "" {
		if e.Status != 0 && e.Status != http.StatusOK {
			b.WriteString(", ")
		}
		b.WriteString("code " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// Unauthorized reports whether err is an HTTP 401 from the platform (the
// caller invalidates its token and tries once more).
func Unauthorized(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusUnauthorized
}

var defaultHTTP = &http.Client{Timeout: 30 * time.Second}

// Do sends in (JSON-encoded; nil sends no body) to path with method and
// decodes the answer into out (nil ignores it). An HTTP 429 becomes a
// channels.RetryAfterError, other 4xx answers except 401 and 408 a
// channels.PermanentError wrapping the APIError.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encoding the request: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url(path), body)
	if err != nil {
		return fmt.Errorf("%s %s: %s", method, path, c.Redact.Error(err))
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.Send(req, out)
}

// Send runs a prepared request (a multipart upload) through the same
// credentials, checks and decoding as Do.
func (c *Client) Send(req *http.Request, out any) error {
	op := req.Method + " " + safePath(req.URL)
	if c.Auth != nil {
		if err := c.Auth(req.Context(), req); err != nil {
			return fmt.Errorf("%s: credentials: %s", op, c.Redact.Error(err))
		}
	}
	req.Header.Set("Accept", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL may carry a query with a token
		}
		return fmt.Errorf("%s: %s", op, c.Redact.Error(err))
	}
	defer resp.Body.Close()
	limit := c.MaxBody
	if limit <= 0 {
		limit = 16 << 20
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return fmt.Errorf("%s: reading the answer: %s", op, c.Redact.Error(err))
	}
	if int64(len(data)) > limit {
		return fmt.Errorf("%s: answer larger than %d bytes", op, limit)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		ae := &APIError{Status: resp.StatusCode, Op: op}
		if c.Check != nil {
			var inner *APIError
			if errors.As(c.Check(data), &inner) {
				ae.Code, ae.Message = inner.Code, c.Redact.String(inner.Message)
			}
		}
		if ae.Message == "" && ae.Code == "" {
			ae.Message = c.Redact.String(snippet(data))
		}
		return classify(ae, resp.Header)
	}
	if c.Check != nil {
		if err := c.Check(data); err != nil {
			var ae *APIError
			if errors.As(err, &ae) {
				ae.Status, ae.Op, ae.Message = resp.StatusCode, op, c.Redact.String(ae.Message)
				return ae
			}
			return fmt.Errorf("%s: %s", op, c.Redact.Error(err))
		}
	}
	if out == nil || len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s: decoding the answer: %w", op, err)
	}
	return nil
}

func classify(ae *APIError, h http.Header) error {
	switch {
	case ae.Status == http.StatusTooManyRequests:
		after := time.Second
		if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s > 0 {
			after = time.Duration(s) * time.Second
		}
		return &channels.RetryAfterError{After: after, Err: ae}
	case ae.Status >= 400 && ae.Status < 500 && ae.Status != http.StatusUnauthorized && ae.Status != http.StatusRequestTimeout:
		return &channels.PermanentError{Err: ae}
	}
	return ae
}

func (c *Client) url(path string) string {
	if strings.HasPrefix(path, "http://") || strings.HasPrefix(path, "https://") {
		return path
	}
	return strings.TrimRight(c.Base, "/") + "/" + strings.TrimLeft(path, "/")
}

// safePath is the URL without its query (which may carry a token).
func safePath(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.Path
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// Envelope returns a Check for platforms that put an error code and message
// in every answer ({"errcode":40014,"errmsg":"..."}, {"code":0,"msg":"ok"}):
// an answer without codeKey passes, and so does one whose code is in ok
// (default 0). Codes may be numbers or strings.
func Envelope(codeKey, msgKey string, ok ...string) func([]byte) error {
	if len(ok) == 0 {
		ok = []string{"0"}
	}
	return func(body []byte) error {
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) != nil {
			return nil
		}
		raw, found := m[codeKey]
		if !found {
			return nil
		}
		code := strings.Trim(string(raw), `"`)
		for _, v := range ok {
			if code == v {
				return nil
			}
		}
		var msg string
		if r, ok := m[msgKey]; ok && json.Unmarshal(r, &msg) != nil {
			msg = string(r)
		}
		return &APIError{Code: code, Message: msg}
	}
}
