// Package bedrocktest is a local fake of AWS Bedrock Runtime's Converse and
// ConverseStream endpoints: JSON for Converse, the AWS event-stream binary
// framing (encoded with the AWS SDK's own encoder) for ConverseStream. It
// records every request and checks that a SigV4 Authorization header is
// present, well formed and correct for the credentials it was given, or
// that a bearer token matches.
//
// Server methods are safe for concurrent use.
package bedrocktest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Event is one ConverseStream event: Type is the :event-type header
// (contentBlockDelta, messageStop, metadata, ...) and Payload its JSON.
// Exception, when set, sends an exception message of that type instead.
type Event struct {
	Type      string
	Payload   any
	Exception string
}

// Reply is what the fake answers to one call.
type Reply struct {
	// Status, when not 0 or 200, answers with that status, ErrorType in
	// X-Amzn-Errortype and {"message": Message}.
	Status    int
	ErrorType string
	Message   string
	// Body is the Converse JSON response.
	Body any
	// Events are the ConverseStream events.
	Events []Event
}

// Request is one recorded call.
type Request struct {
	Op      string // "converse" or "converse-stream"
	ModelID string
	Header  http.Header
	Body    map[string]any
	// AuthError is why the Authorization header was refused ("" = accepted).
	AuthError string
}

// Server is the fake.
type Server struct {
	URL string

	creds  aws.Credentials
	region string
	bearer string

	mu       sync.Mutex
	replies  []Reply
	requests []Request
}

// New starts a fake that accepts SigV4 signatures made with creds for
// region, or the bearer token when it is not empty; it is closed by
// t.Cleanup.
func New(t testing.TB, creds aws.Credentials, region, bearer string) *Server {
	s := &Server{creds: creds, region: region, bearer: bearer}
	hs := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

// Push queues replies, answered in order.
func (s *Server) Push(r ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, r...)
}

// Requests returns the recorded calls.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

var pathRE = regexp.MustCompile(`^/model/([^/]+)/(converse|converse-stream)$`)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	m := pathRE.FindStringSubmatch(r.URL.EscapedPath())
	if m == nil || r.Method != http.MethodPost {
		http.Error(w, `{"message":"unknown operation"}`, http.StatusNotFound)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	rec := Request{Op: m[2], Header: r.Header.Clone()}
	rec.ModelID, _ = url.PathUnescape(m[1])
	_ = json.Unmarshal(raw, &rec.Body)
	rec.AuthError = s.checkAuth(r, raw)

	s.mu.Lock()
	s.requests = append(s.requests, rec)
	var rep Reply
	if len(s.replies) > 0 {
		rep, s.replies = s.replies[0], s.replies[1:]
	} else {
		rep = Reply{Status: http.StatusInternalServerError, ErrorType: "InternalServerException", Message: "bedrocktest: no reply queued"}
	}
	s.mu.Unlock()

	if rec.AuthError != "" {
		w.Header().Set("X-Amzn-Errortype", "UnrecognizedClientException:http://internal.amazon.com/coral/com.amazon.coral.service/")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": rec.AuthError})
		return
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		w.Header().Set("X-Amzn-Errortype", rep.ErrorType+":http://internal.amazon.com/coral/com.amazon.bedrock/")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": rep.Message})
		return
	}
	if rec.Op == "converse" {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep.Body)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	enc := eventstream.NewEncoder()
	flusher, _ := w.(http.Flusher)
	for _, ev := range rep.Events {
		payload, _ := json.Marshal(ev.Payload)
		var h eventstream.Headers
		if ev.Exception != "" {
			h.Set(":message-type", eventstream.StringValue("exception"))
			h.Set(":exception-type", eventstream.StringValue(ev.Exception))
		} else {
			h.Set(":message-type", eventstream.StringValue("event"))
			h.Set(":event-type", eventstream.StringValue(ev.Type))
		}
		h.Set(":content-type", eventstream.StringValue("application/json"))
		if err := enc.Encode(w, eventstream.Message{Headers: h, Payload: payload}); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

var authRE = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$`)

// checkAuth verifies the bearer token, or parses the SigV4 header and
// recomputes the signature over the headers it names.
func (s *Server) checkAuth(r *http.Request, body []byte) string {
	auth := r.Header.Get("Authorization")
	if s.bearer != "" {
		if auth != "Bearer "+s.bearer {
			return "bearer token missing or wrong"
		}
		return ""
	}
	m := authRE.FindStringSubmatch(auth)
	if m == nil {
		return fmt.Sprintf("malformed SigV4 Authorization header %q", auth)
	}
	if m[1] != s.creds.AccessKeyID || m[3] != s.region || m[4] != "bedrock" {
		return fmt.Sprintf("credential scope %s/%s/%s, want %s/%s/bedrock", m[1], m[3], m[4], s.creds.AccessKeyID, s.region)
	}
	if s.creds.SessionToken != "" && r.Header.Get("X-Amz-Security-Token") != s.creds.SessionToken {
		return "X-Amz-Security-Token missing or wrong"
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || when.Format("20060102") != m[2] {
		return "X-Amz-Date missing or not the credential date"
	}
	// Rebuild the request with only the signed headers and sign it again.
	check, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.EscapedPath(), bytes.NewReader(body))
	check.URL.RawPath = r.URL.EscapedPath()
	for _, name := range strings.Split(m[5], ";") {
		if name == "host" || name == "content-length" {
			continue
		}
		for _, v := range r.Header.Values(name) {
			check.Header.Add(name, v)
		}
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), s.creds, check, hex.EncodeToString(sum[:]), "bedrock", s.region, when); err != nil {
		return "re-sign: " + err.Error()
	}
	if got := authRE.FindStringSubmatch(check.Header.Get("Authorization")); got == nil || got[6] != m[6] {
		return "signature does not match"
	}
	return ""
}
