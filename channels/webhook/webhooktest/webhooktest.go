// Package webhooktest plays the other end of the webhook channel in tests:
// a Caller that signs and POSTs requests to /hooks/<name> (or forges them),
// and a Receiver, a local HTTP server standing in for a hook's replyUrl,
// that verifies the signature of every reply POST and records it.
//
// Both are safe for concurrent use and stop with the test (t.Cleanup).
package webhooktest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/webhook"
)

// Caller signs and sends requests to one hook.
type Caller struct {
	// URL is the hook's URL (http://gateway/hooks/<name>).
	URL    string
	Secret string
	// Now is the clock the timestamp comes from (time.Now when nil).
	Now func() time.Time
	// HTTP is the client (a 2-minute timeout when nil).
	HTTP *http.Client
}

// Result is the gateway's answer to one request.
type Result struct {
	Status int
	Body   webhook.Response
	// Raw is the body as sent.
	Raw string
}

// Post sends req signed now.
func (c *Caller) Post(t testing.TB, req webhook.Request) Result {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	ts := c.now().Unix()
	return c.PostRaw(t, body, strconv.FormatInt(ts, 10), webhook.Sign(c.Secret, ts, body))
}

// PostRaw sends body with the given header values as they are (forged,
// stale and replayed requests).
func (c *Caller) PostRaw(t testing.TB, body []byte, timestamp, signature string) Result {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	if timestamp != "" {
		r.Header.Set(webhook.HeaderTimestamp, timestamp)
	}
	if signature != "" {
		r.Header.Set(webhook.HeaderSignature, signature)
	}
	hc := c.HTTP
	if hc == nil {
		// No keep-alive: a test's goroutine-leak check sees no idle
		// connection of ours.
		hc = &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
	}
	resp, err := hc.Do(r)
	if err != nil {
		t.Fatalf("POST %s: %v", c.URL, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	res := Result{Status: resp.StatusCode, Raw: string(raw)}
	_ = json.Unmarshal(raw, &res.Body)
	return res
}

func (c *Caller) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Received is one reply POST as the receiver got it.
type Received struct {
	Reply webhook.Reply
	// Verified is true when the signature matched and the timestamp was
	// fresh; Err says why not otherwise.
	Verified bool
	Err      string
	At       time.Time
}

// Receiver stands in for a replyUrl.
type Receiver struct {
	URL string

	secret string
	srv    *httptest.Server

	mu     sync.Mutex
	got    []Received
	status []int // answers to give before 200, one per request
}

// NewReceiver starts a receiver that verifies with secret.
func NewReceiver(t testing.TB, secret string) *Receiver {
	r := &Receiver{secret: secret}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL + "/reply"
	t.Cleanup(r.srv.Close)
	return r
}

// FailNext makes the next requests get these statuses, in order.
func (r *Receiver) FailNext(status ...int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = append(r.status, status...)
}

// Got returns the replies received so far, verified or not, in order.
func (r *Receiver) Got() []Received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Received(nil), r.got...)
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, 8<<20))
	if err != nil {
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
		return
	}
	rec := Received{At: time.Now()}
	if _, err := webhook.Verify(r.secret, req.Header.Get(webhook.HeaderTimestamp), req.Header.Get(webhook.HeaderSignature), body, time.Now()); err != nil {
		rec.Err = err.Error()
	} else {
		rec.Verified = true
	}
	if err := json.Unmarshal(body, &rec.Reply); err != nil && rec.Err == "" {
		rec.Err = "body: " + err.Error()
		rec.Verified = false
	}
	r.mu.Lock()
	r.got = append(r.got, rec)
	status := http.StatusOK
	if len(r.status) > 0 {
		status, r.status = r.status[0], r.status[1:]
	}
	r.mu.Unlock()
	if !rec.Verified {
		status = http.StatusUnauthorized
	}
	w.WriteHeader(status)
}
