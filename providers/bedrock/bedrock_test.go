package bedrock_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/bedrock"
	"github.com/nanobot-go/nanobot/providers/bedrock/bedrocktest"
)

var testCreds = aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SessionToken: "session-token-example"}

// envOf is an environment holding only vars (HOME points at an empty
// folder, so no real ~/.aws is read).
func envOf(t *testing.T, vars map[string]string) func(string) string {
	home := t.TempDir()
	return func(k string) string {
		if k == "HOME" {
			return home
		}
		return vars[k]
	}
}

func keysEnv(t *testing.T) func(string) string {
	return envOf(t, map[string]string{
		"AWS_ACCESS_KEY_ID": testCreds.AccessKeyID, "AWS_SECRET_ACCESS_KEY": testCreds.SecretAccessKey,
		"AWS_SESSION_TOKEN": testCreds.SessionToken,
	})
}

func newProvider(t *testing.T, o bedrock.Options) *bedrock.Provider {
	t.Helper()
	p, err := bedrock.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func weatherTool() providers.ToolDefinition {
	return providers.ToolDefinition{Name: "weather", Description: "Weather for a city",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}}
}

func TestConverseSignsAndParsesToolUseAndUsage(t *testing.T) {
	fake := bedrocktest.New(t, testCreds, "us-west-2", "")
	fake.Push(bedrocktest.Reply{Body: map[string]any{
		"output": map[string]any{"message": map[string]any{"role": "assistant", "content": []any{
			map[string]any{"reasoningContent": map[string]any{"reasoningText": map[string]any{"text": "need weather", "signature": "sig1"}}},
			map[string]any{"text": "Checking."},
			map[string]any{"toolUse": map[string]any{"toolUseId": "tu-1", "name": "weather", "input": map[string]any{"city": "Oslo"}}},
		}}},
		"stopReason": "tool_use",
		"usage":      map[string]any{"inputTokens": 100, "outputTokens": 20, "totalTokens": 150, "cacheReadInputTokens": 30},
	}})
	p := newProvider(t, bedrock.Options{Endpoint: providers.Endpoint{APIBase: fake.URL}, Region: "us-west-2", Getenv: keysEnv(t)})
	resp, err := p.Chat(t.Context(), providers.ChatRequest{
		Model: "us.anthropic.claude-sonnet-4-20250514-v1:0",
		Messages: []providers.Message{
			{Role: providers.RoleSystem, Content: "You are terse."},
			{Role: providers.RoleUser, Content: "Weather in Oslo?"},
		},
		Tools:     []providers.ToolDefinition{weatherTool()},
		MaxTokens: 512,
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.AuthError != "" {
		t.Fatalf("fake refused the signature: %s", r.AuthError)
	}
	if r.Op != "converse" || r.ModelID != "us.anthropic.claude-sonnet-4-20250514-v1:0" {
		t.Errorf("op %q model %q", r.Op, r.ModelID)
	}
	wantBody := map[string]any{
		"system":          []any{map[string]any{"text": "You are terse."}},
		"messages":        []any{map[string]any{"role": "user", "content": []any{map[string]any{"text": "Weather in Oslo?"}}}},
		"inferenceConfig": map[string]any{"maxTokens": 512.0},
		"toolConfig": map[string]any{
			"tools": []any{map[string]any{"toolSpec": map[string]any{"name": "weather", "description": "Weather for a city",
				"inputSchema": map[string]any{"json": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}}}}},
			"toolChoice": map[string]any{"auto": map[string]any{}},
		},
	}
	if d := cmp.Diff(wantBody, r.Body); d != "" {
		t.Errorf("request body (-want +got):\n%s", d)
	}
	want := &providers.LLMResponse{
		Content:        "Checking.",
		ToolCalls:      []providers.ToolCallRequest{{ID: "tu-1", Name: "weather", Arguments: map[string]any{"city": "Oslo"}, RawArguments: `{"city":"Oslo"}`}},
		FinishReason:   providers.FinishToolCalls,
		ThinkingBlocks: []providers.ThinkingBlock{{Type: "thinking", Thinking: "need weather", Signature: "sig1"}},
		Usage:          providers.Usage{PromptTokens: 130, CompletionTokens: 20, TotalTokens: 150, CacheReadTokens: 30},
		Model:          "us.anthropic.claude-sonnet-4-20250514-v1:0",
	}
	if d := cmp.Diff(want, resp); d != "" {
		t.Errorf("response (-want +got):\n%s", d)
	}
}

func TestWrongSecretIsRefusedByTheFake(t *testing.T) {
	// The fake's signature check is what the other tests rely on: a
	// request signed with another secret must fail it.
	fake := bedrocktest.New(t, testCreds, "us-east-1", "")
	fake.Push(bedrocktest.Reply{Body: map[string]any{}})
	env := envOf(t, map[string]string{"AWS_ACCESS_KEY_ID": testCreds.AccessKeyID, "AWS_SECRET_ACCESS_KEY": "not-the-secret",
		"AWS_SESSION_TOKEN": testCreds.SessionToken})
	p := newProvider(t, bedrock.Options{Endpoint: providers.Endpoint{APIBase: fake.URL}, Region: "us-east-1", Getenv: env})
	_, err := p.Chat(t.Context(), providers.ChatRequest{Model: "amazon.nova-pro-v1:0", Messages: []providers.Message{{Role: "user", Content: "hi"}}})
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.StatusCode != http.StatusForbidden || pe.Transient {
		t.Fatalf("err = %v, want a permanent 403", err)
	}
	if !strings.Contains(pe.Message, "UnrecognizedClientException") || strings.Contains(err.Error(), "not-the-secret") {
		t.Errorf("message %q: want the error type and no secret", pe.Message)
	}
	if got := fake.Requests()[0].AuthError; got != "signature does not match" {
		t.Errorf("fake says %q", got)
	}
}

func TestConverseStreamEventStream(t *testing.T) {
	fake := bedrocktest.New(t, testCreds, "eu-central-1", "")
	fake.Push(bedrocktest.Reply{Events: []bedrocktest.Event{
		{Type: "messageStart", Payload: map[string]any{"role": "assistant"}},
		{Type: "contentBlockDelta", Payload: map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"reasoningContent": map[string]any{"text": "hmm"}}}},
		{Type: "contentBlockDelta", Payload: map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"reasoningContent": map[string]any{"signature": "sig-9"}}}},
		{Type: "contentBlockStop", Payload: map[string]any{"contentBlockIndex": 0}},
		{Type: "contentBlockDelta", Payload: map[string]any{"contentBlockIndex": 1, "delta": map[string]any{"text": "Hel"}}},
		{Type: "contentBlockDelta", Payload: map[string]any{"contentBlockIndex": 1, "delta": map[string]any{"text": "lo"}}},
		{Type: "contentBlockStop", Payload: map[string]any{"contentBlockIndex": 1}},
		{Type: "contentBlockStart", Payload: map[string]any{"contentBlockIndex": 2, "start": map[string]any{"toolUse": map[string]any{"toolUseId": "tu-7", "name": "weather"}}}},
		{Type: "contentBlockDelta", Payload: map[string]any{"contentBlockIndex": 2, "delta": map[string]any{"toolUse": map[string]any{"input": `{"ci`}}}},
		{Type: "contentBlockDelta", Payload: map[string]any{"contentBlockIndex": 2, "delta": map[string]any{"toolUse": map[string]any{"input": `ty":"Rome"}`}}}},
		{Type: "contentBlockStop", Payload: map[string]any{"contentBlockIndex": 2}},
		{Type: "messageStop", Payload: map[string]any{"stopReason": "tool_use"}},
		{Type: "metadata", Payload: map[string]any{"usage": map[string]any{"inputTokens": 40, "outputTokens": 9, "totalTokens": 49}, "metrics": map[string]any{"latencyMs": 120}}},
	}})
	p := newProvider(t, bedrock.Options{Endpoint: providers.Endpoint{APIBase: fake.URL}, Region: "eu-central-1", Getenv: keysEnv(t)})
	var deltas []providers.Delta
	resp, err := p.Stream(t.Context(), providers.ChatRequest{
		Model:    "anthropic.claude-3-5-haiku-20241022-v1:0",
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "Weather in Rome?"}},
		Tools:    []providers.ToolDefinition{weatherTool()},
	}, func(d providers.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	r := fake.Requests()[0]
	if r.AuthError != "" || r.Op != "converse-stream" {
		t.Fatalf("op %q auth %q", r.Op, r.AuthError)
	}
	if got := r.Header.Get("Accept"); got != "application/vnd.amazon.eventstream" {
		t.Errorf("Accept = %q", got)
	}
	wantDeltas := []providers.Delta{{Reasoning: "hmm"}, {Content: "Hel"}, {Content: "lo"}}
	if d := cmp.Diff(wantDeltas, deltas); d != "" {
		t.Errorf("deltas (-want +got):\n%s", d)
	}
	want := &providers.LLMResponse{
		Content:        "Hello",
		ToolCalls:      []providers.ToolCallRequest{{ID: "tu-7", Name: "weather", Arguments: map[string]any{"city": "Rome"}, RawArguments: `{"city":"Rome"}`}},
		FinishReason:   providers.FinishToolCalls,
		ThinkingBlocks: []providers.ThinkingBlock{{Type: "thinking", Thinking: "hmm", Signature: "sig-9"}},
		Usage:          providers.Usage{PromptTokens: 40, CompletionTokens: 9, TotalTokens: 49},
		Model:          "anthropic.claude-3-5-haiku-20241022-v1:0",
	}
	if d := cmp.Diff(want, resp); d != "" {
		t.Errorf("response (-want +got):\n%s", d)
	}
}

func TestStreamFailures(t *testing.T) {
	cases := []struct {
		name          string
		events        []bedrocktest.Event
		wantTransient bool
		wantSentinel  error
		wantIn        string
	}{
		{name: "cut before messageStop", events: []bedrocktest.Event{
			{Type: "contentBlockDelta", Payload: map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"text": "Hel"}}},
		}, wantTransient: true, wantSentinel: providers.ErrStreamTruncated},
		{name: "throttled mid-stream", events: []bedrocktest.Event{
			{Type: "contentBlockDelta", Payload: map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"text": "Hel"}}},
			{Exception: "throttlingException", Payload: map[string]any{"message": "Too many tokens, please wait"}},
		}, wantTransient: true, wantIn: "throttlingException: Too many tokens"},
		{name: "validation", events: []bedrocktest.Event{
			{Exception: "validationException", Payload: map[string]any{"message": "bad input"}},
		}, wantTransient: false, wantIn: "validationException: bad input"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := bedrocktest.New(t, testCreds, "us-east-1", "")
			fake.Push(bedrocktest.Reply{Events: tc.events})
			p := newProvider(t, bedrock.Options{Endpoint: providers.Endpoint{APIBase: fake.URL}, Region: "us-east-1", Getenv: keysEnv(t)})
			_, err := p.Stream(t.Context(), providers.ChatRequest{Model: "amazon.nova-lite-v1:0",
				Messages: []providers.Message{{Role: "user", Content: "hi"}}}, nil)
			var pe *providers.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *providers.Error", err)
			}
			if pe.Transient != tc.wantTransient {
				t.Errorf("transient = %v, want %v (%v)", pe.Transient, tc.wantTransient, err)
			}
			if tc.wantSentinel != nil && !errors.Is(err, tc.wantSentinel) {
				t.Errorf("err = %v, want %v", err, tc.wantSentinel)
			}
			if !strings.Contains(err.Error(), tc.wantIn) {
				t.Errorf("err = %q, want it to contain %q", err, tc.wantIn)
			}
		})
	}
}

func TestHTTPErrorsAreClassified(t *testing.T) {
	fake := bedrocktest.New(t, testCreds, "us-east-1", "")
	fake.Push(
		bedrocktest.Reply{Status: http.StatusTooManyRequests, ErrorType: "ThrottlingException", Message: "Rate exceeded"},
		bedrocktest.Reply{Status: http.StatusBadRequest, ErrorType: "ValidationException", Message: "The model ID is invalid"},
	)
	p := newProvider(t, bedrock.Options{Endpoint: providers.Endpoint{APIBase: fake.URL}, Region: "us-east-1", Getenv: keysEnv(t)})
	req := providers.ChatRequest{Model: "amazon.nova-lite-v1:0", Messages: []providers.Message{{Role: "user", Content: "hi"}}}
	for _, want := range []struct {
		status    int
		transient bool
		msg       string
	}{{429, true, "ThrottlingException: Rate exceeded"}, {400, false, "ValidationException: The model ID is invalid"}} {
		_, err := p.Chat(t.Context(), req)
		var pe *providers.Error
		if !errors.As(err, &pe) || pe.StatusCode != want.status || pe.Transient != want.transient || pe.Message != want.msg {
			t.Errorf("err = %#v, want status %d transient %v message %q", err, want.status, want.transient, want.msg)
		}
	}
}

func TestBearerTokenInsteadOfSigV4(t *testing.T) {
	fake := bedrocktest.New(t, aws.Credentials{}, "", "bedrock-api-key-123")
	fake.Push(bedrocktest.Reply{Body: map[string]any{"output": map[string]any{"message": map[string]any{"content": []any{map[string]any{"text": "ok"}}}}, "stopReason": "end_turn"}})
	// No AWS keys and no region anywhere: the key and endpoint suffice.
	p := newProvider(t, bedrock.Options{Endpoint: providers.Endpoint{APIKey: "bedrock-api-key-123", APIBase: fake.URL}, Getenv: envOf(t, nil)})
	resp, err := p.Chat(t.Context(), providers.ChatRequest{Model: "amazon.nova-lite-v1:0", Messages: []providers.Message{{Role: "user", Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "ok" || resp.FinishReason != providers.FinishStop {
		t.Errorf("resp = %+v", resp)
	}
	if got := fake.Requests()[0]; got.AuthError != "" || got.Header.Get("X-Amz-Date") != "" {
		t.Errorf("auth error %q, X-Amz-Date %q (want a bearer request, unsigned)", got.AuthError, got.Header.Get("X-Amz-Date"))
	}
}

func TestProfileFromSharedFiles(t *testing.T) {
	dir := t.TempDir()
	credsFile := filepath.Join(dir, "credentials")
	configFile := filepath.Join(dir, "config")
	writeFile(t, credsFile, "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = nope\n\n[work]\n"+
		"aws_access_key_id = "+testCreds.AccessKeyID+"\naws_secret_access_key = "+testCreds.SecretAccessKey+"\naws_session_token="+testCreds.SessionToken+"\n")
	writeFile(t, configFile, "[default]\nregion = us-east-1\n\n[profile work]\nregion = ap-southeast-2\n")
	fake := bedrocktest.New(t, testCreds, "ap-southeast-2", "")
	fake.Push(bedrocktest.Reply{Body: map[string]any{"output": map[string]any{"message": map[string]any{"content": []any{map[string]any{"text": "ok"}}}}}})
	// Environment keys exist but a configured profile wins (as in boto3).
	env := envOf(t, map[string]string{"AWS_SHARED_CREDENTIALS_FILE": credsFile, "AWS_CONFIG_FILE": configFile,
		"AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "env-secret"})
	p := newProvider(t, bedrock.Options{Endpoint: providers.Endpoint{APIBase: fake.URL}, Profile: "work", Getenv: env})
	if _, err := p.Chat(t.Context(), providers.ChatRequest{Model: "meta.llama3-70b-instruct-v1:0", Messages: []providers.Message{{Role: "user", Content: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	if got := fake.Requests()[0].AuthError; got != "" {
		t.Fatalf("fake refused: %s", got)
	}
}

func TestMissingCredentialsAndRegionSayWhatToSet(t *testing.T) {
	req := providers.ChatRequest{Model: "amazon.nova-lite-v1:0", Messages: []providers.Message{{Role: "user", Content: "hi"}}}
	p := newProvider(t, bedrock.Options{Getenv: envOf(t, nil)})
	if _, err := p.Chat(t.Context(), req); err == nil || !strings.Contains(err.Error(), "providers.bedrock.region") {
		t.Errorf("no region: err = %v", err)
	}
	p = newProvider(t, bedrock.Options{Endpoint: providers.Endpoint{APIBase: "http://127.0.0.1:1"}, Region: "us-east-1", Getenv: envOf(t, nil)})
	if _, err := p.Chat(t.Context(), req); err == nil || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Errorf("no credentials: err = %v", err)
	}
}

func TestHistoryConversion(t *testing.T) {
	fake := bedrocktest.New(t, testCreds, "us-east-1", "")
	fake.Push(bedrocktest.Reply{Body: map[string]any{"output": map[string]any{"message": map[string]any{"content": []any{map[string]any{"text": "done"}}}}, "stopReason": "end_turn"}})
	p := newProvider(t, bedrock.Options{Endpoint: providers.Endpoint{APIBase: fake.URL, ExtraBody: map[string]any{"top_k": 5.0}}, Region: "us-east-1", Getenv: keysEnv(t)})
	temp := 0.2
	_, err := p.Chat(t.Context(), providers.ChatRequest{
		Model: "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-pro-v1:0",
		Messages: []providers.Message{
			{Role: providers.RoleUser, Parts: []providers.ContentPart{providers.TextPart("look"), providers.ImagePart("data:image/jpg;base64,aGk=")}},
			{Role: providers.RoleAssistant, ToolCalls: []providers.ToolCall{
				{ID: "a", Type: "function", Function: providers.FunctionCall{Name: "weather", Arguments: `{"city":"X"}`}},
				{ID: "b", Type: "function", Function: providers.FunctionCall{Name: "weather", Arguments: `{"city":"Y"}`}},
			}},
			{Role: providers.RoleTool, ToolCallID: "a", Content: "sunny"},
			{Role: providers.RoleTool, ToolCallID: "b", Content: ""},
			{Role: providers.RoleUser, Content: "thanks"},
		},
		Temperature: &temp,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := fake.Requests()[0]
	if r.AuthError != "" {
		t.Fatalf("fake refused (model id with ':' and '/' in the path): %s", r.AuthError)
	}
	if r.ModelID != "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-pro-v1:0" {
		t.Errorf("model id %q", r.ModelID)
	}
	want := map[string]any{
		"messages": []any{
			map[string]any{"role": "user", "content": []any{
				map[string]any{"text": "look"},
				map[string]any{"image": map[string]any{"format": "jpeg", "source": map[string]any{"bytes": "aGk="}}},
			}},
			map[string]any{"role": "assistant", "content": []any{
				map[string]any{"toolUse": map[string]any{"toolUseId": "a", "name": "weather", "input": map[string]any{"city": "X"}}},
				map[string]any{"toolUse": map[string]any{"toolUseId": "b", "name": "weather", "input": map[string]any{"city": "Y"}}},
			}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"toolResult": map[string]any{"toolUseId": "a", "content": []any{map[string]any{"text": "sunny"}}, "status": "success"}},
				map[string]any{"toolResult": map[string]any{"toolUseId": "b", "content": []any{map[string]any{"text": "(empty)"}}, "status": "success"}},
				map[string]any{"text": "thanks"},
			}},
		},
		"inferenceConfig":              map[string]any{"maxTokens": 4096.0, "temperature": 0.2},
		"additionalModelRequestFields": map[string]any{"top_k": 5.0},
		// Tool history without tools on offer needs a declared tool.
		"toolConfig": map[string]any{"tools": []any{map[string]any{"toolSpec": map[string]any{"name": "nanobot_noop",
			"description": "Placeholder so earlier tool calls in the history are accepted; do not call it.",
			"inputSchema": map[string]any{"json": map[string]any{"type": "object", "properties": map[string]any{}}}}}}},
	}
	if d := cmp.Diff(want, r.Body); d != "" {
		t.Errorf("request body (-want +got):\n%s", d)
	}
}

func TestReasoningEffortTurnsOnClaudeThinking(t *testing.T) {
	fake := bedrocktest.New(t, testCreds, "us-east-1", "")
	ok := bedrocktest.Reply{Body: map[string]any{"output": map[string]any{"message": map[string]any{"content": []any{map[string]any{"text": "ok"}}}}}}
	fake.Push(ok, ok)
	p := newProvider(t, bedrock.Options{Endpoint: providers.Endpoint{APIBase: fake.URL}, Region: "us-east-1", Getenv: keysEnv(t)})
	temp := 0.5
	for _, model := range []string{"us.anthropic.claude-sonnet-4-20250514-v1:0", "global.anthropic.claude-opus-4-7"} {
		if _, err := p.Chat(t.Context(), providers.ChatRequest{Model: model, ReasoningEffort: "medium", MaxTokens: 1000, Temperature: &temp,
			Messages: []providers.Message{{Role: "user", Content: "hi"}}}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := fake.Requests()
	if d := cmp.Diff(map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 4096.0}}, reqs[0].Body["additionalModelRequestFields"]); d != "" {
		t.Errorf("sonnet thinking (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]any{"maxTokens": 5096.0}, reqs[0].Body["inferenceConfig"]); d != "" {
		t.Errorf("sonnet inferenceConfig (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]any{"thinking": map[string]any{"type": "adaptive", "effort": "medium"}}, reqs[1].Body["additionalModelRequestFields"]); d != "" {
		t.Errorf("opus thinking (-want +got):\n%s", d)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}
