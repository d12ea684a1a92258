package providertest_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/providers/providertest"
)

func post(t *testing.T, srv *providertest.Server, path, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Test", "yes")
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

// sse reads a stream into (event name, data) pairs.
func sse(t *testing.T, r io.Reader) [][2]string {
	t.Helper()
	var out [][2]string
	name := ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			out = append(out, [2]string{name, strings.TrimPrefix(line, "data: ")})
			name = ""
		}
	}
	return out
}

func TestOpenAIStreamShape(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "abcdef", Chunks: 3, ToolCalls: []providertest.ToolCall{{Name: "f", Arguments: `{"a":1}`}}})
	res := post(t, srv, "/v1/chat/completions", `{"model":"m","stream":true}`)
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	events := sse(t, res.Body)
	if last := events[len(events)-1][1]; last != "[DONE]" {
		t.Errorf("last event %q, want [DONE]", last)
	}
	var text, args strings.Builder
	var finish string
	var usage map[string]any
	for _, ev := range events[:len(events)-1] {
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Function struct{ Arguments string } `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
		}
		if err := json.Unmarshal([]byte(ev[1]), &chunk); err != nil {
			t.Fatalf("chunk %s: %v", ev[1], err)
		}
		for _, c := range chunk.Choices {
			text.WriteString(c.Delta.Content)
			for _, tc := range c.Delta.ToolCalls {
				args.WriteString(tc.Function.Arguments)
			}
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
	}
	if text.String() != "abcdef" || args.String() != `{"a":1}` || finish != "tool_calls" || usage == nil {
		t.Errorf("text %q args %q finish %q usage %v", text.String(), args.String(), finish, usage)
	}
}

func TestAnthropicStreamShape(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Thinking: []providertest.Thinking{{Text: "hm", Signature: "s"}}, Text: "yo", Chunks: 2,
		ToolCalls: []providertest.ToolCall{{Name: "f", Arguments: `{}`}}})
	res := post(t, srv, "/v1/messages", `{"model":"c","stream":true}`)
	var names []string
	for _, ev := range sse(t, res.Body) {
		var payload struct {
			Type  string `json:"type"`
			Delta struct {
				Type string `json:"type"`
			} `json:"delta"`
		}
		if err := json.Unmarshal([]byte(ev[1]), &payload); err != nil {
			t.Fatal(err)
		}
		if payload.Type != ev[0] {
			t.Errorf("event %q carries type %q", ev[0], payload.Type)
		}
		name := ev[0]
		if payload.Delta.Type != "" && name == "content_block_delta" {
			name += ":" + payload.Delta.Type
		}
		names = append(names, name)
	}
	want := []string{"message_start", "ping",
		"content_block_start", "content_block_delta:thinking_delta", "content_block_delta:thinking_delta", "content_block_delta:signature_delta", "content_block_stop",
		"content_block_start", "content_block_delta:text_delta", "content_block_delta:text_delta", "content_block_stop",
		"content_block_start", "content_block_delta:input_json_delta", "content_block_delta:input_json_delta", "content_block_stop",
		"message_delta", "message_stop"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestRecordingAndHandler(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "queued"})
	srv.Handle(func(r providertest.Request) providertest.Reply {
		return providertest.Reply{Text: "echo " + r.Model}
	})
	for _, model := range []string{"first", "second"} {
		res := post(t, srv, "/v1/chat/completions", `{"model":"`+model+`"}`)
		var body struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"first": "queued", "second": "echo second"}[model]
		if got := body.Choices[0].Message.Content; got != want {
			t.Errorf("%s: content %q, want %q", model, got, want)
		}
	}
	reqs := srv.WaitRequests(2, time.Second)
	if reqs[0].Format != providertest.OpenAI || reqs[1].Model != "second" || reqs[0].Header.Get("X-Test") != "yes" {
		t.Errorf("recorded %+v", reqs)
	}
	if srv.Pending() != 0 {
		t.Errorf("pending = %d", srv.Pending())
	}
}

func TestErrorReplies(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Status: 429, RetryAfter: "5"}, providertest.Reply{Status: 529})
	res := post(t, srv, "/v1/chat/completions", `{}`)
	if res.StatusCode != 429 || res.Header.Get("Retry-After") != "5" {
		t.Errorf("got %d retry-after %q", res.StatusCode, res.Header.Get("Retry-After"))
	}
	res = post(t, srv, "/v1/messages", `{}`)
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 529 || !strings.Contains(string(b), "overloaded_error") {
		t.Errorf("got %d %s", res.StatusCode, b)
	}
}

func TestLatency(t *testing.T) {
	srv := providertest.New(t)
	srv.SetLatency(80 * time.Millisecond)
	srv.Push(providertest.Reply{Text: "slow"})
	start := time.Now()
	post(t, srv, "/v1/chat/completions", `{}`)
	if elapsed := time.Since(start); elapsed < 80*time.Millisecond {
		t.Errorf("answered after %s, want at least 80ms", elapsed)
	}
}

func TestStallIsReleasedOnCleanup(t *testing.T) {
	// The stalled handler must not keep the server's Close from returning;
	// this test passing at all (and quickly) is the check.
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "abc", StallAfter: 1})
	res := post(t, srv, "/v1/chat/completions", `{"stream":true}`)
	buf := make([]byte, 64)
	if _, err := res.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
}

func TestModelCatalog(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "kept for the next POST"})
	srv.SetModels(http.StatusOK, `{"data":[{"id":"m1"}]}`)
	res, err := http.Get(srv.OpenAIBase() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(b) != `{"data":[{"id":"m1"}]}` {
		t.Errorf("catalog answered %d %s", res.StatusCode, b)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Format != providertest.Models || srv.Pending() != 1 {
		t.Errorf("recorded %+v with %d replies pending, want one catalog request and the queue untouched", reqs, srv.Pending())
	}
}
