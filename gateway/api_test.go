package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// apiLLM answers "echo: <user text>" word by word with usage 10+3, and
// records every request. A text starting with "block" holds the call
// until its context ends, which it reports on cancelled.
type apiLLM struct {
	mu        sync.Mutex
	requests  []providers.ChatRequest
	blocked   chan struct{} // closed when a "block" call started
	cancelled chan struct{} // closed when that call's context ended
	once      sync.Once
	pause     time.Duration // between words (default 1 ms)
}

func newAPILLM() *apiLLM {
	return &apiLLM{blocked: make(chan struct{}), cancelled: make(chan struct{})}
}

func (l *apiLLM) Chat(ctx context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	return l.Stream(ctx, req, func(providers.Delta) {})
}

func (l *apiLLM) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	l.mu.Lock()
	l.requests = append(l.requests, req)
	l.mu.Unlock()
	u := req.Messages[len(req.Messages)-1].Text()
	body := u[strings.LastIndex(u, "\n")+1:]
	if strings.HasPrefix(body, "block") {
		l.once.Do(func() { close(l.blocked) })
		<-ctx.Done()
		close(l.cancelled)
		return nil, ctx.Err()
	}
	reply := "echo: " + body
	for _, w := range strings.SplitAfter(reply, " ") {
		onDelta(providers.Delta{Content: w})
		time.Sleep(max(l.pause, time.Millisecond)) // let the dispatcher edit between words
	}
	return &providers.LLMResponse{Content: reply, FinishReason: "stop", Usage: providers.Usage{PromptTokens: 10, CompletionTokens: 3}}, nil
}

func (l *apiLLM) reqs() []providers.ChatRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]providers.ChatRequest(nil), l.requests...)
}

func apiConfig() configs.Config {
	cfg := testConfig(nil)
	cfg.Agents.Defaults.Model = "test-model"
	return cfg
}

// apiClient is the official SDK on r's API with the instance's access
// token as its key (opts may set another).
func apiClient(t testing.TB, r *running, opts ...option.RequestOption) *openai.Client {
	return apiClientAt(r.addr, append([]option.RequestOption{option.WithAPIKey(r.token(t))}, opts...)...)
}

// apiClientAt is the SDK on the API at addr with no valid key unless opts
// set one.
func apiClientAt(addr string, opts ...option.RequestOption) *openai.Client {
	c := openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL("http://" + addr + "/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0),
	}, opts...)...)
	return &c
}

func TestAPIModels(t *testing.T) {
	r := startGateway(t, apiConfig(), newAPILLM())
	cl := apiClient(t, r)
	page, err := cl.Models.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != "test-model" {
		t.Fatalf("models %+v, want one: test-model", page.Data)
	}
	if _, err := cl.Models.Get(t.Context(), "nanobot"); err != nil {
		t.Errorf("model nanobot: %v", err)
	}
	_, err = cl.Models.Get(t.Context(), "gpt-4o")
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" {
		t.Errorf("unknown model: got %v, want 404 model_not_found", err)
	}

	// A listed id with its provider's prefix is found by that id too.
	cfg := apiConfig()
	cfg.Agents.Defaults.Model = "openai/gpt-4o"
	cl = apiClient(t, startGateway(t, cfg, newAPILLM()))
	page, err = cl.Models.List(t.Context())
	if err != nil || len(page.Data) != 1 {
		t.Fatalf("models %+v: %v", page, err)
	}
	if m, err := cl.Models.Get(t.Context(), page.Data[0].ID); err != nil || m.ID != "openai/gpt-4o" {
		t.Errorf("model %q: %+v %v", page.Data[0].ID, m, err)
	}
}

func TestAPIChatCompletion(t *testing.T) {
	r := startGateway(t, apiConfig(), newAPILLM())
	cl := apiClient(t, r)
	resp, err := cl.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model:    "test-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello there")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "echo: hello there" {
		t.Errorf("content %q, want %q", got, "echo: hello there")
	}
	if resp.Usage.PromptTokens != 10 || resp.Usage.CompletionTokens != 3 || resp.Usage.TotalTokens != 13 {
		t.Errorf("usage %+v, want 10+3=13", resp.Usage)
	}
	// An unknown model is refused, not answered by another.
	_, err = cl.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("unknown model: got %v, want 404", err)
	}
}

// streamAnswer runs one streaming completion and returns the accumulated
// answer and how many content chunks carried it.
func streamAnswer(ctx context.Context, cl *openai.Client, params openai.ChatCompletionNewParams, opts ...option.RequestOption) (openai.ChatCompletionAccumulator, int, error) {
	st := cl.Chat.Completions.NewStreaming(ctx, params, opts...)
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for st.Next() {
		c := st.Current()
		acc.AddChunk(c)
		if len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
			chunks++
		}
	}
	return acc, chunks, st.Err()
}

func TestAPIStreamingWithUsage(t *testing.T) {
	llm := newAPILLM()
	llm.pause = 15 * time.Millisecond // longer than the first message's hold
	r := startGateway(t, apiConfig(), llm)
	acc, chunks, err := streamAnswer(t.Context(), apiClient(t, r), openai.ChatCompletionNewParams{
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("one two three four five six")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != "echo: one two three four five six" {
		t.Errorf("streamed content %q", got)
	}
	if chunks < 2 {
		t.Errorf("answer came in %d content chunk(s), want it streamed in several", chunks)
	}
	if acc.Usage.PromptTokens != 10 || acc.Usage.CompletionTokens != 3 || acc.Usage.TotalTokens != 13 {
		t.Errorf("usage %+v, want 10+3=13", acc.Usage)
	}
}

func TestAPISessionContinuity(t *testing.T) {
	cfg := apiConfig()
	llm := newAPILLM()
	r := startGateway(t, cfg, llm)
	cl := apiClient(t, r)
	ask := func(text string, opts ...option.RequestOption) string {
		t.Helper()
		resp, err := cl.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)},
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Choices[0].Message.Content
	}
	ask("first", option.WithJSONSet("session_id", "s1"))
	ask("second", option.WithHeader("X-Session-Id", "s1"))
	reqs := llm.reqs()
	var seen []string
	for _, m := range reqs[1].Messages[1 : len(reqs[1].Messages)-1] {
		seen = append(seen, m.Role+": "+m.Text())
	}
	if want := []string{"user: first", "assistant: echo: first"}; strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Errorf("second request's history %q, want %q", seen, want)
	}
	paths := configs.PathsFor(filepath.Join(r.dir, "config.json"), &cfg)
	if files := sessionFiles(t, paths.Sessions); len(files) != 1 || !strings.HasPrefix(files[0], "api") {
		t.Errorf("session files %q, want one for api:s1", files)
	}
}

func sessionFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestAPIStatelessStoresNothing(t *testing.T) {
	cfg := apiConfig()
	llm := newAPILLM()
	r := startGateway(t, cfg, llm)
	resp, err := apiClient(t, r).Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("be brief"),
			openai.UserMessage("my name is Ada"),
			openai.AssistantMessage("Hello Ada."),
			openai.UserMessage("what is my name"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "echo: what is my name" {
		t.Errorf("content %q", got)
	}
	req := llm.reqs()[0]
	var seen []string
	for _, m := range req.Messages[1 : len(req.Messages)-1] {
		seen = append(seen, m.Role+": "+m.Text())
	}
	if want := "user: my name is Ada|assistant: Hello Ada."; strings.Join(seen, "|") != want {
		t.Errorf("history sent %q, want %q", seen, want)
	}
	paths := configs.PathsFor(filepath.Join(r.dir, "config.json"), &cfg)
	if files := sessionFiles(t, paths.Sessions); len(files) != 0 {
		t.Errorf("a stateless request stored sessions %q", files)
	}
}

func TestAPIToolRoundTripShowsOnlyTheAnswer(t *testing.T) {
	reg := tools.NewRegistry()
	if err := reg.Register(clockTool{}); err != nil {
		t.Fatal(err)
	}
	cfg := apiConfig() // tool hints and progress are on by default
	r := startGatewayOpts(t, cfg, &toolLLM{}, func(o *Options) { o.Tools = reg })
	cl := apiClient(t, r)
	params := openai.ChatCompletionNewParams{Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("time?")}}
	resp, err := cl.Chat.Completions.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "It is 12:00" {
		t.Errorf("answer %q, want only %q", got, "It is 12:00")
	}
	if resp.Usage.PromptTokens != 200 || resp.Usage.CompletionTokens != 14 || resp.Usage.PromptTokensDetails.CachedTokens != 120 {
		t.Errorf("usage %+v, want both calls counted (200+14, 120 of it cached)", resp.Usage)
	}
	acc, _, err := streamAnswer(t.Context(), cl, params)
	if err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != "It is 12:00" {
		t.Errorf("streamed answer %q, want only %q", got, "It is 12:00")
	}
}

func TestAPIDisconnectCancelsTurn(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			llm := newAPILLM()
			r := startGateway(t, apiConfig(), llm)
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			go func() {
				params := openai.ChatCompletionNewParams{Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("block me")}}
				cl := apiClient(t, r)
				if stream {
					_, _, err := streamAnswer(ctx, cl, params)
					errc <- err
					return
				}
				_, err := cl.Chat.Completions.New(ctx, params)
				errc <- err
			}()
			select {
			case <-llm.blocked:
			case <-time.After(10 * time.Second):
				t.Fatal("the provider was never called")
			}
			cancel()
			select {
			case <-llm.cancelled:
			case <-time.After(10 * time.Second):
				t.Fatal("the provider's request was not cancelled after the client went away")
			}
			if err := <-errc; err == nil {
				t.Error("the cancelled request succeeded")
			}
		})
	}
}

func TestAPIAuthOnNonLoopbackBind(t *testing.T) {
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skipf("cannot listen beyond loopback here: %v", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	key := "sk-test-0123456789abcdef"
	cfg := apiConfig()
	cfg.API.APIKeys = []string{key}
	r := startGatewayOpts(t, cfg, newAPILLM(), func(o *Options) { o.Listener = ln })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if r.addr == "" {
		t.Fatal("no address")
	}
	params := openai.ChatCompletionNewParams{Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}

	_, err = apiClientAt(addr, option.WithAPIKey("sk-wrong-0123456789abcdef")).Chat.Completions.New(t.Context(), params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Fatalf("wrong key: got %v, want 401", err)
	}
	if strings.Contains(apiErr.RawJSON(), "sk-wrong") || strings.Contains(apiErr.RawJSON(), key) {
		t.Errorf("the 401 echoes a key: %s", apiErr.RawJSON())
	}
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("no key: status %d, want 401", resp.StatusCode)
	}
	got, err := apiClientAt(addr, option.WithAPIKey(key)).Chat.Completions.New(t.Context(), params)
	if err != nil {
		t.Fatalf("right key: %v", err)
	}
	if got.Choices[0].Message.Content != "echo: hi" {
		t.Errorf("content %q", got.Choices[0].Message.Content)
	}
}

// TestAPINeedsAKeyFromLoopbackToo: with no key configured the API still
// wants one, from 127.0.0.1 too (the agent's own commands and other users
// of the machine connect from there): the instance's access token. On a
// bind beyond loopback the same holds, so the gateway starts.
func TestAPINeedsAKeyFromLoopbackToo(t *testing.T) {
	r := startGateway(t, apiConfig(), newAPILLM())
	for name, opts := range map[string][]option.RequestOption{
		"no key":         {option.WithHeaderDel("Authorization")},
		"a wrong key":    {option.WithAPIKey(strings.Repeat("0", 48))},
		"the key, proxy": {option.WithAPIKey("unused"), option.WithHeader("X-Forwarded-For", "127.0.0.1")},
	} {
		_, err := apiClientAt(r.addr, opts...).Models.List(t.Context())
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
			t.Errorf("%s from loopback: %v, want 401", name, err)
		}
	}
	if _, err := apiClient(t, r).Models.List(t.Context()); err != nil {
		t.Errorf("the access token: %v", err)
	}

	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skipf("cannot listen beyond loopback here: %v", err)
	}
	wide := startGatewayOpts(t, apiConfig(), newAPILLM(), func(o *Options) { o.Listener.Close(); o.Listener = ln })
	addr := fmt.Sprintf("127.0.0.1:%d", ln.Addr().(*net.TCPAddr).Port)
	if _, err := apiClientAt(addr).Models.List(t.Context()); err == nil {
		t.Error("a bind beyond loopback answered without a key")
	}
	if _, err := apiClientAt(addr, option.WithAPIKey(wide.token(t))).Models.List(t.Context()); err != nil {
		t.Errorf("the access token beyond loopback: %v", err)
	}
}

// TestAPIClientKeysHaveSessionsOfTheirOwn: a key of api.apiKeys cannot
// continue another key's named session or stored response; the owner's
// token and api.apiKey share theirs; api.shareSessions shares them all.
func TestAPIClientKeysHaveSessionsOfTheirOwn(t *testing.T) {
	keyA, keyB, shared := "sk-a-0123456789abcdef", "sk-b-0123456789abcdef", "sk-s-0123456789abcdef"
	for _, share := range []bool{false, true} {
		t.Run(fmt.Sprintf("shareSessions=%v", share), func(t *testing.T) {
			cfg := apiConfig()
			cfg.API.APIKey, cfg.API.APIKeys, cfg.API.ShareSessions = shared, []string{keyA, keyB}, share
			llm := newAPILLM()
			r := startGateway(t, cfg, llm)
			say := func(key, text string) []providers.Message {
				t.Helper()
				_, err := apiClient(t, r, option.WithAPIKey(key)).Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)},
				}, option.WithJSONSet("session_id", "notes"))
				if err != nil {
					t.Fatal(err)
				}
				reqs := llm.reqs()
				return reqs[len(reqs)-1].Messages
			}
			saw := func(msgs []providers.Message, text string) bool {
				for _, m := range msgs {
					if strings.Contains(m.Text(), text) {
						return true
					}
				}
				return false
			}
			say(keyA, "secret of A")
			if got := saw(say(keyB, "B here"), "secret of A"); got != share {
				t.Errorf("key B's turn in session \"notes\" saw key A's message: %v, want %v", got, share)
			}
			if !saw(say(keyA, "A again"), "secret of A") {
				t.Error("key A lost its own session")
			}
			say(shared, "secret of the owner")
			if !saw(say(r.token(t), "owner here"), "secret of the owner") {
				t.Error("the access token does not share api.apiKey's sessions")
			}

			first, err := apiClient(t, r, option.WithAPIKey(keyA)).Responses.New(t.Context(), respText("remember 42"))
			if err != nil {
				t.Fatal(err)
			}
			next := respText("what number?")
			next.PreviousResponseID = openai.String(first.ID)
			_, err = apiClient(t, r, option.WithAPIKey(keyB)).Responses.New(t.Context(), next)
			var apiErr *openai.Error
			refused := errors.As(err, &apiErr) && apiErr.StatusCode == 404
			if refused == share || (!share && apiErr.Code != "previous_response_not_found") {
				t.Errorf("key B continuing key A's response: %v, want refused=%v", err, !share)
			}
			if _, err := apiClient(t, r, option.WithAPIKey(keyA)).Responses.New(t.Context(), next); err != nil {
				t.Errorf("key A continuing its own response: %v", err)
			}
		})
	}
}

func TestAPIBadRequests(t *testing.T) {
	cfg := apiConfig()
	cfg.API.MaxBodyBytes = 2048
	r := startGateway(t, cfg, newAPILLM())
	url := "http://" + r.addr + "/v1/chat/completions"
	user := `[{"role":"user","content":"hi"}]`
	cases := []struct {
		name, body, ctype string
		header            [2]string
		status            int
		want              string // in the error message
	}{
		{"bad JSON", `{"messages":`, "", [2]string{}, 400, "invalid JSON"},
		{"messages wrong type", `{"messages":"hi"}`, "", [2]string{}, 400, "messages"},
		{"stream wrong type", `{"stream":"yes","messages":` + user + `}`, "", [2]string{}, 400, "stream"},
		{"missing messages", `{"model":"test-model"}`, "", [2]string{}, 400, "messages"},
		{"empty messages", `{"messages":[]}`, "", [2]string{}, 400, "messages"},
		{"bad role", `{"messages":[{"role":"robot","content":"hi"}]}`, "", [2]string{}, 400, "messages[0].role"},
		{"last not user", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}`, "", [2]string{}, 400, "messages[1].role"},
		{"image not a data URL", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, "", [2]string{}, 400, "messages[0].content[0].image_url.url"},
		{"remote image", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"http://169.254.169.254/x.png"}}]}]}`, "", [2]string{}, 400, "not fetched"},
		{"data URL not an image", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,aGVsbG8="}}]}]}`, "", [2]string{}, 400, "not an image"},
		{"unknown part", `{"messages":[{"role":"user","content":[{"type":"input_audio"}]}]}`, "", [2]string{}, 400, "messages[0].content[0].type"},
		{"bad session id", `{"session_id":"../etc","messages":` + user + `}`, "", [2]string{}, 400, "session_id"},
		{"unknown model", `{"model":"gpt-4o","messages":` + user + `}`, "", [2]string{}, 404, "gpt-4o"},
		{"too large", `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 4096) + `"}]}`, "", [2]string{}, 413, "api.maxBodyBytes"},
		{"form post", `{"messages":` + user + `}`, "text/plain", [2]string{}, 400, "Content-Type"},
		{"foreign page", `{"messages":` + user + `}`, "", [2]string{"Origin", "https://evil.example"}, 403, "api.corsOrigins"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", url, strings.NewReader(c.body))
			ct := c.ctype
			if ct == "" {
				ct = "application/json"
			}
			req.Header.Set("Content-Type", ct)
			if c.header[0] != "" {
				req.Header.Set(c.header[0], c.header[1])
			}
			resp, err := http.DefaultClient.Do(r.authed(t, req))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Error struct{ Message, Type, Code string } `json:"error"`
			}
			if err := jsonDecode(resp, &body); err != nil {
				t.Fatalf("status %d, body not OpenAI's error shape: %v", resp.StatusCode, err)
			}
			if resp.StatusCode != c.status || !strings.Contains(body.Error.Message, c.want) || body.Error.Type == "" || body.Error.Code == "" {
				t.Errorf("got %d %+v, want %d with a message naming %q", resp.StatusCode, body.Error, c.status, c.want)
			}
		})
	}
}

func TestAPIConcurrentStreamingClients(t *testing.T) {
	r := startGateway(t, apiConfig(), newAPILLM())
	cl := apiClient(t, r)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			want := fmt.Sprintf("echo: client %d says hi", i)
			acc, _, err := streamAnswer(t.Context(), cl, openai.ChatCompletionNewParams{
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fmt.Sprintf("client %d says hi", i))},
			})
			switch {
			case err != nil:
				errs <- fmt.Errorf("client %d: %w", i, err)
			case len(acc.Choices) == 0 || acc.Choices[0].Message.Content != want:
				errs <- fmt.Errorf("client %d got %+v, want %q", i, acc.Choices, want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func jsonDecode(resp *http.Response, v any) error {
	return json.NewDecoder(resp.Body).Decode(v)
}
