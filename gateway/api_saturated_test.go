package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/nanobot-go/nanobot/providers"
)

// gatedLLM holds every call until open is closed, and reports each call
// it sees on seen.
type gatedLLM struct {
	seen chan struct{}
	open chan struct{}
	once sync.Once
}

func (l *gatedLLM) Chat(ctx context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	return l.Stream(ctx, req, func(providers.Delta) {})
}

func (l *gatedLLM) Stream(ctx context.Context, _ providers.ChatRequest, _ func(providers.Delta)) (*providers.LLMResponse, error) {
	l.seen <- struct{}{}
	select {
	case <-l.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &providers.LLMResponse{Content: "done", FinishReason: "stop"}, nil
}

func (l *gatedLLM) release() { l.once.Do(func() { close(l.open) }) }

func TestAPISaturatedAnswers429(t *testing.T) {
	llm := &gatedLLM{seen: make(chan struct{}, 16), open: make(chan struct{})}
	defer llm.release()
	cfg := apiConfig()
	cfg.API.MaxConcurrent, cfg.API.QueueTimeoutMs = 2, 50
	r := startGateway(t, cfg, llm)
	cl := apiClient(t, r)
	params := openai.ChatCompletionNewParams{Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}

	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := cl.Chat.Completions.New(t.Context(), params)
			errs <- err
		}()
	}
	for i := range 2 {
		select {
		case <-llm.seen:
		case <-time.After(10 * time.Second):
			t.Fatalf("the provider saw %d requests, want 2 in flight", i)
		}
	}

	// The official client surfaces the third as a 429 in OpenAI's shape
	// (the deadline only keeps a broken gateway from hanging the test).
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := cl.Chat.Completions.New(ctx, params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("third request: got %v, want a 429 error", err)
	}
	if apiErr.Type != "rate_limit_error" || apiErr.Code != "agent_saturated" || !strings.Contains(apiErr.Message, "agent busy: 2 turns running") {
		t.Errorf("429 error type %q code %q message %q, want rate_limit_error, agent_saturated, \"agent busy: 2 turns running...\"", apiErr.Type, apiErr.Code, apiErr.Message)
	}
	if ra := apiErr.Response.Header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After %q, want \"1\"", ra)
	}

	// The same on the wire, for a streaming request of the Responses API.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.addr+"/v1/responses", strings.NewReader(`{"input":"hi","stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(r.authed(t, req))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var shape struct {
		Error struct{ Message, Type, Code string } `json:"error"`
	}
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || json.Unmarshal(body, &shape) != nil ||
		shape.Error.Type != "rate_limit_error" || shape.Error.Code != "agent_saturated" || shape.Error.Message == "" {
		t.Errorf("responses while saturated: %d Retry-After %q %s, want 429 with Retry-After and the error shape", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	select {
	case <-llm.seen:
		t.Fatal("a refused request reached the provider")
	default:
	}

	llm.release()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("an admitted request failed: %v", err)
		}
	}
	got, err := cl.Chat.Completions.New(t.Context(), params)
	if err != nil {
		t.Fatalf("after the turns ended: %v, want an answer", err)
	}
	if got.Choices[0].Message.Content != "done" {
		t.Errorf("answer %q, want done", got.Choices[0].Message.Content)
	}
}
