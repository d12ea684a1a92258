package gateway

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
)

// partialLLM streams "partial answer" and then holds the call until its
// context ends, which it reports on cancelled.
type partialLLM struct {
	cancelled chan struct{}
	once      sync.Once
}

func (l *partialLLM) Chat(ctx context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	return l.Stream(ctx, req, func(providers.Delta) {})
}

func (l *partialLLM) Stream(ctx context.Context, _ providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	onDelta(providers.Delta{Content: "partial "})
	onDelta(providers.Delta{Content: "answer"})
	<-ctx.Done()
	l.once.Do(func() { close(l.cancelled) })
	return nil, ctx.Err()
}

// An API client that goes away mid-stream stops its turn (a /stop for its
// session): the stream the turn opened is closed, so the dispatcher holds
// none and the request's chat worker retires.
func TestAPIDisconnectMidStreamClosesTheStream(t *testing.T) {
	llm := &partialLLM{cancelled: make(chan struct{})}
	r := startGatewayOpts(t, apiConfig(), llm, func(o *Options) { o.DeliveryIdle = 20 * time.Millisecond })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	streaming, errc := make(chan struct{}), make(chan error, 1)
	go func() {
		st := apiClient(t, r).Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("tell me everything")},
		})
		var once sync.Once
		for st.Next() {
			if c := st.Current(); len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
				once.Do(func() { close(streaming) })
			}
		}
		errc <- st.Err()
	}()
	select {
	case <-streaming:
	case <-time.After(10 * time.Second):
		t.Fatal("the answer never started streaming")
	}
	metrics := func() string { _, body := get(t, "http://"+r.addr+"/metrics"); return body }
	if m := metrics(); !strings.Contains(m, "nanobot_outbound_streams_open 1") {
		t.Fatalf("while streaming, /metrics has no open stream:\n%s", grepLines(m, "nanobot_outbound_"))
	}
	cancel()
	select {
	case <-llm.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn was not stopped after the client went away")
	}
	<-errc
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("last scrape:\n%s", grepLines(last, "nanobot_outbound_"))
		}
	}()
	waitfor.True(t, "no open stream and no chat worker", func() bool {
		last = metrics()
		return strings.Contains(last, "nanobot_outbound_streams_open 0") && strings.Contains(last, "nanobot_outbound_chat_workers 0")
	})
}

// The messages waiting in a session's queue behind its running turn count
// in the inbound queue depth (they used to be invisible: the bus's queue
// is drained into the sessions at once).
func TestQueueDepthCountsSessionQueues(t *testing.T) {
	fc := newFake("fake")
	llm := newAPILLM()
	r := startGateway(t, testConfig(map[string][]any{"fake": {"*"}}), llm, fc)
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c1", SenderID: "u1", Content: "block", MessageID: "1"}
	<-llm.blocked
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c1", SenderID: "u1", Content: "two", MessageID: "2"}
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c1", SenderID: "u1", Content: "three", MessageID: "3"}
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("last scrape:\n%s", grepLines(last, "queue_depth"))
		}
	}()
	waitfor.True(t, "two messages waiting for the agent", func() bool {
		_, last = get(t, "http://"+r.addr+"/metrics")
		return strings.Contains(last, "nanobot_inbound_queue_depth 2")
	})
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c1", SenderID: "u1", Content: "/stop", MessageID: "4"}
	waitfor.True(t, "nothing waiting after /stop", func() bool {
		_, last = get(t, "http://"+r.addr+"/metrics")
		return strings.Contains(last, "nanobot_inbound_queue_depth 0")
	})
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
