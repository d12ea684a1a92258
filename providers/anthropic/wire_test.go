package anthropic_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/anthropic"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// rawServer answers every request with status, headers and body as given,
// and hands the request it saw to seen (buffered, one request).
func rawServer(t *testing.T, status int, header map[string]string, body string) (*anthropic.Provider, <-chan *http.Request) {
	t.Helper()
	seen := make(chan *http.Request, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case seen <- r:
		default:
		}
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	p, err := anthropic.New(anthropic.Options{Endpoint: providers.Endpoint{APIKey: testKey, APIBase: srv.URL, HTTPClient: srv.Client()}})
	if err != nil {
		t.Fatal(err)
	}
	return p, seen
}

// sseBody joins events in the shape the API sends them: an event line, a
// data line, an empty line.
func sseBody(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		typ, _, _ := strings.Cut(strings.TrimPrefix(e, `{"type":"`), `"`)
		b.WriteString("event: " + typ + "\ndata: " + e + "\n\n")
	}
	return b.String()
}

// A stream as the API records it: thinking with a signature, text, a tool
// call whose input arrives in fragments that split keys and strings, a
// ping, usage split between message_start and message_delta.
var recordedStream = []string{
	`{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":1}}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
	`{"type":"ping"}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user wants the "}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"weather."}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Let me "}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"check."}}`,
	`{"type":"content_block_stop","index":1}`,
	`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01T1x","name":"get_weather","input":{}}}`,
	`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}`,
	`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"locat"}}`,
	`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"ion\": \"San Fra"}}`,
	`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"ncisco, CA\"}"}}`,
	`{"type":"content_block_stop","index":2}`,
	`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}`,
	`{"type":"message_stop"}`,
}

func TestRecordedStream(t *testing.T) {
	p, seen := rawServer(t, 200, map[string]string{"Content-Type": "text/event-stream"}, sseBody(recordedStream...))
	var deltas []providers.Delta
	resp, err := p.Stream(t.Context(), userReq("weather in SF?"), func(d providers.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	want := &providers.LLMResponse{
		Content: "Let me check.",
		ToolCalls: []providers.ToolCallRequest{{ID: "toolu_01T1x", Name: "get_weather",
			Arguments: map[string]any{"location": "San Francisco, CA"}, RawArguments: `{"location": "San Francisco, CA"}`}},
		ThinkingBlocks: []providers.ThinkingBlock{{Type: "thinking", Thinking: "The user wants the weather.", Signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}},
		FinishReason:   providers.FinishToolCalls,
		Model:          "claude-sonnet-4-5",
		Usage:          providers.Usage{PromptTokens: 3212, CompletionTokens: 89, TotalTokens: 3301, CacheReadTokens: 3000, CacheWriteTokens: 200},
	}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	wantDeltas := []providers.Delta{{Reasoning: "The user wants the "}, {Reasoning: "weather."}, {Content: "Let me "}, {Content: "check."}}
	if diff := cmp.Diff(wantDeltas, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	r := <-seen
	for k, want := range map[string]string{
		"Authorization": "Bearer " + testKey, "Anthropic-Version": "2026-10-21",
		"Content-Type": "application/json", "Accept": "text/event-stream", "X-Api-Key": "",
	} {
		if got := r.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
}

func TestRecordedStreamFaults(t *testing.T) {
	head := recordedStream[:9] // up to the first text delta: 3 deltas
	tests := []struct {
		name          string
		events        []string
		wantTransient bool
		wantIs        error
		wantMsg       string
	}{
		{name: "overloaded mid-stream", wantTransient: true, wantMsg: "Overloaded",
			events: append(head[:9:9], `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)},
		{name: "api error mid-stream", wantTransient: true, wantMsg: "Internal server error",
			events: append(head[:9:9], `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`)},
		{name: "invalid request mid-stream", wantMsg: "prompt is too long",
			events: append(head[:9:9], `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}`)},
		{name: "ends without message_stop", wantTransient: true, wantIs: providers.ErrStreamTruncated, events: head},
		{name: "delta for a block never started", wantMsg: "malformed stream",
			events: append(head[:9:9], `{"type":"content_block_delta","index":5,"delta":{"type":"text_delta","text":"x"}}`)},
		{name: "not JSON", wantMsg: "malformed stream", events: append(head[:9:9], `{"type":"content_block_delta",`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := rawServer(t, 200, map[string]string{"Content-Type": "text/event-stream"}, sseBody(tt.events...))
			got := 0
			pe := failingCall(t, p, true, func(providers.Delta) { got++ })
			if pe.Transient != tt.wantTransient || pe.StatusCode != 0 {
				t.Errorf("transient %v status %d, want %v 0 (%v)", pe.Transient, pe.StatusCode, tt.wantTransient, pe)
			}
			if tt.wantIs != nil && !errors.Is(pe, tt.wantIs) {
				t.Errorf("err = %v, want %v", pe, tt.wantIs)
			}
			if !strings.Contains(pe.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want it to say %q", pe, tt.wantMsg)
			}
			if got != 3 {
				t.Errorf("%d deltas before the fault, want 3", got)
			}
		})
	}
}

// A connection that stalls after message_stop does not lose the answer.
func TestStallAfterMessageStop(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, sseBody(recordedStream...))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	p, err := anthropic.New(anthropic.Options{Endpoint: providers.Endpoint{APIBase: srv.URL, HTTPClient: srv.Client(), StreamIdleTimeout: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Stream(t.Context(), userReq("x"), nil)
	if err != nil {
		t.Fatalf("err = %v, want the complete answer", err)
	}
	if resp.Content != "Let me check." || len(resp.ToolCalls) != 1 {
		t.Errorf("response %+v", resp)
	}
}

func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		name          string
		status        int
		header        map[string]string
		body          string
		wantTransient bool
		wantRetryMs   int64
		wantMsg       string
	}{
		{name: "429 retry-after", status: 429, header: map[string]string{"Retry-After": "7"}, wantTransient: true, wantRetryMs: 7000,
			body:    `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`,
			wantMsg: "rate_limit_error: Number of request tokens"},
		{name: "529 overloaded", status: 529, header: map[string]string{"Retry-After": "2"}, wantTransient: true, wantRetryMs: 2000,
			body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, wantMsg: "overloaded_error: Overloaded"},
		{name: "500", status: 500, wantTransient: true,
			body: `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, wantMsg: "api_error: Internal server error"},
		{name: "400", status: 400,
			body: `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`, wantMsg: "invalid_request_error: max_tokens"},
		{name: "401 redacted", status: 401,
			body: `{"type":"error","error":{"type":"authentication_error","message":"invalid key ` + testKey + `"}}`, wantMsg: "[redacted]"},
		{name: "proxy HTML", status: 502, wantTransient: true, body: `<html>Bad Gateway</html>`, wantMsg: "Bad Gateway"},
	}
	for _, tt := range tests {
		for _, mode := range modes {
			t.Run(tt.name+"/"+mode.name, func(t *testing.T) {
				p, _ := rawServer(t, tt.status, tt.header, tt.body)
				pe := failingCall(t, p, mode.stream, nil)
				if pe.StatusCode != tt.status || pe.Transient != tt.wantTransient || pe.RetryAfter != tt.wantRetryMs {
					t.Errorf("status %d transient %v retryAfter %d, want %d %v %d",
						pe.StatusCode, pe.Transient, pe.RetryAfter, tt.status, tt.wantTransient, tt.wantRetryMs)
				}
				if !strings.Contains(pe.Error(), tt.wantMsg) || strings.Contains(pe.Error(), testKey) {
					t.Errorf("err = %q, want it to say %q and not the key", pe, tt.wantMsg)
				}
			})
		}
	}
}

// ExtraBody's top-level keys (dots and all) replace ours but cannot turn a
// stream off; ExtraHeaders are sent as given and win over ours.
func TestExtras(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv := providertest.New(t)
			srv.Push(providertest.Reply{Text: "ok"})
			p := newProvider(t, srv, func(o *anthropic.Options) {
				o.ExtraBody = map[string]any{"max_tokens": 77, "metadata": map[string]any{"user_id": "u1"}, "a.b": true, "stream": false}
				o.ExtraHeaders = map[string]string{"anthropic-beta": "context-1m-2025-08-07", "anthropic-version": "2023-06-01"}
			})
			call(t, p, mode.stream, userReq("x"), nil)
			got := srv.Requests()[0]
			want := map[string]any{"max_tokens": 77.0, "metadata": map[string]any{"user_id": "u1"}, "a.b": true, "model": "claude-test"}
			for k, v := range want {
				if diff := cmp.Diff(v, got.Body[k]); diff != "" {
					t.Errorf("%s (-want +got):\n%s", k, diff)
				}
			}
			if got.Stream != mode.stream {
				t.Errorf("stream = %v, want %v", got.Stream, mode.stream)
			}
			if h := got.Header.Get("Anthropic-Beta"); h != "context-1m-2025-08-07" {
				t.Errorf("anthropic-beta = %q", h)
			}
			if h := got.Header.Values("Anthropic-Version"); len(h) != 1 || h[0] != "2023-06-01" {
				t.Errorf("anthropic-version = %q, want the configured one only", h)
			}
		})
	}
}
