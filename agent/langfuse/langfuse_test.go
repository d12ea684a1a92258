package langfuse_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/langfuse"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// ingestion is a local Langfuse ingestion endpoint: it checks basic auth
// and records the events of every batch.
type ingestion struct {
	srv *httptest.Server

	mu      sync.Mutex
	batches int
	events  []map[string]any
	badAuth int
	arrived chan struct{}
}

func newIngestion(t *testing.T) *ingestion {
	in := &ingestion{arrived: make(chan struct{}, 100)}
	in.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if r.URL.Path != "/api/public/ingestion" || r.Method != http.MethodPost || !ok || user != "pk-lf-test" || pass != "sk-lf-test" {
			in.mu.Lock()
			in.badAuth++
			in.mu.Unlock()
			http.Error(w, `{"message":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		var body struct {
			Batch []map[string]any `json:"batch"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, "bad json", 400)
			return
		}
		in.mu.Lock()
		in.batches++
		in.events = append(in.events, body.Batch...)
		in.mu.Unlock()
		w.WriteHeader(http.StatusMultiStatus)
		_, _ = w.Write([]byte(`{"successes":[],"errors":[]}`))
		in.arrived <- struct{}{}
	}))
	t.Cleanup(in.srv.Close)
	return in
}

func (in *ingestion) all() []map[string]any {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]map[string]any(nil), in.events...)
}

func (in *ingestion) ofType(typ string) []map[string]any {
	var out []map[string]any
	for _, e := range in.all() {
		if e["type"] == typ {
			out = append(out, e["body"].(map[string]any))
		}
	}
	return out
}

func start(t *testing.T, o langfuse.Options) *langfuse.Client {
	t.Helper()
	o.PublicKey, o.SecretKey = "pk-lf-test", "sk-lf-test"
	c, err := langfuse.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go c.Run(ctx)
	t.Cleanup(func() {
		cctx, done := context.WithTimeout(context.Background(), 5*time.Second)
		c.Close(cctx)
		done()
		cancel()
	})
	return c
}

func turnCtx(msgID string) context.Context {
	return tools.WithCallContext(context.Background(), tools.CallContext{
		Channel: "telegram", ChatID: "42", SessionKey: "telegram:42", MessageID: msgID, SenderID: "alice", Source: "user",
	})
}

func TestTurnTraceGenerationsAndToolSpans(t *testing.T) {
	in := newIngestion(t)
	c := start(t, langfuse.Options{Host: in.srv.URL, FlushInterval: 20 * time.Millisecond})
	cost := 0.0125
	ctx := turnCtx("m-1")
	c.ObserveLLM(ctx, agent.LLMCall{Agent: "main", Provider: "bedrock", Model: "anthropic.claude-x", Duration: 1500 * time.Millisecond,
		Usage: providers.Usage{PromptTokens: 120, CompletionTokens: 30, CacheReadTokens: 100}, CostUSD: &cost})
	c.ObserveTool(ctx, agent.ToolCall{Name: "web_search", Duration: 200 * time.Millisecond, Failed: true})
	c.ObserveLLM(ctx, agent.LLMCall{Agent: "main", Provider: "bedrock", Model: "anthropic.claude-x", Duration: time.Second,
		Err: errors.New("bedrock: status 429: ThrottlingException: slow down")})
	// Another turn of the same chat gets its own trace.
	c.ObserveLLM(turnCtx("m-2"), agent.LLMCall{Agent: "main", Provider: "bedrock", Model: "anthropic.claude-x", Duration: time.Second})

	deadline := time.After(10 * time.Second)
	for len(in.ofType("generation-create")) < 3 || len(in.ofType("span-create")) < 1 {
		select {
		case <-in.arrived:
		case <-deadline:
			t.Fatalf("events: %v", in.all())
		}
	}
	traces, gens, spans := in.ofType("trace-create"), in.ofType("generation-create"), in.ofType("span-create")
	if len(traces) != 2 {
		t.Fatalf("%d traces, want one per turn (2): %v", len(traces), traces)
	}
	tr := traces[0]
	if tr["sessionId"] != "telegram:42" || tr["userId"] != "alice" || tr["name"] != "turn.telegram" {
		t.Errorf("trace %v", tr)
	}
	g := gens[0]
	if g["traceId"] != tr["id"] || gens[1]["traceId"] != tr["id"] || spans[0]["traceId"] != tr["id"] {
		t.Errorf("the calls of one turn are not in its trace: %v / %v / %v", gens[0]["traceId"], gens[1]["traceId"], spans[0]["traceId"])
	}
	if gens[2]["traceId"] == tr["id"] {
		t.Error("the second turn shares the first turn's trace")
	}
	usage := g["usage"].(map[string]any)
	if g["model"] != "anthropic.claude-x" || usage["input"] != 120.0 || usage["output"] != 30.0 || usage["total"] != 150.0 ||
		g["costDetails"].(map[string]any)["total"] != cost || g["level"] != "DEFAULT" {
		t.Errorf("generation %v", g)
	}
	if g["usageDetails"].(map[string]any)["cache_read_input_tokens"] != 100.0 {
		t.Errorf("usageDetails %v", g["usageDetails"])
	}
	start, _ := time.Parse(time.RFC3339Nano, g["startTime"].(string))
	end, _ := time.Parse(time.RFC3339Nano, g["endTime"].(string))
	if end.Sub(start) != 1500*time.Millisecond {
		t.Errorf("latency %s, want 1.5s", end.Sub(start))
	}
	if gens[1]["level"] != "ERROR" || !strings.Contains(gens[1]["statusMessage"].(string), "ThrottlingException") {
		t.Errorf("failed call %v", gens[1])
	}
	if spans[0]["name"] != "tool.web_search" || spans[0]["level"] != "ERROR" {
		t.Errorf("span %v", spans[0])
	}
	for _, e := range in.all() {
		if b, _ := json.Marshal(e); bytes.Contains(b, []byte("sk-lf-test")) {
			t.Errorf("an event carries the secret key: %s", b)
		}
	}
}

// logBuf collects the client's log lines.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// With the host down, observing never blocks the turn, and the lost
// batches are logged; a full queue drops instead of waiting.
func TestHostDownDropsWithoutBlocking(t *testing.T) {
	in := newIngestion(t)
	in.srv.Close() // nothing listens any more
	logs := &logBuf{}
	c := start(t, langfuse.Options{Host: in.srv.URL, FlushInterval: 10 * time.Millisecond, QueueSize: 8, BatchSize: 4,
		Log: slog.New(slog.NewTextHandler(logs, nil))})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 5000 {
			c.ObserveLLM(turnCtx("m"), agent.LLMCall{Provider: "p", Model: "m", Duration: time.Duration(i)})
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("observing blocked while the Langfuse host is down")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !(strings.Contains(logs.String(), "host unreachable; batch dropped") && strings.Contains(logs.String(), "queue full; events dropped")) {
		if time.Now().After(deadline) {
			t.Fatalf("no drop lines logged:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Close sends what is still queued (a long flush interval never fires).
func TestCloseFlushes(t *testing.T) {
	in := newIngestion(t)
	c, err := langfuse.New(langfuse.Options{Host: in.srv.URL, PublicKey: "pk-lf-test", SecretKey: "sk-lf-test", FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	go c.Run(context.Background())
	c.ObserveLLM(turnCtx("m-9"), agent.LLMCall{Provider: "p", Model: "m"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.Close(ctx)
	if n := len(in.ofType("generation-create")); n != 1 {
		t.Errorf("%d generations after Close, want 1", n)
	}
}

func TestFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	o, ok, missing := langfuse.FromEnv(env(map[string]string{"LANGFUSE_PUBLIC_KEY": "pk", "LANGFUSE_SECRET_KEY": "sk", "LANGFUSE_HOST": "https://h", "LANGFUSE_BASE_URL": "https://b"}))
	if !ok || missing != "" || o.Host != "https://b" || o.PublicKey != "pk" || o.SecretKey != "sk" {
		t.Errorf("both: %+v %v %q", o, ok, missing)
	}
	if _, ok, missing := langfuse.FromEnv(env(map[string]string{"LANGFUSE_SECRET_KEY": "sk"})); ok || missing != "LANGFUSE_PUBLIC_KEY" {
		t.Errorf("secret only: %v %q", ok, missing)
	}
	if _, ok, missing := langfuse.FromEnv(env(nil)); ok || missing != "" {
		t.Errorf("none: %v %q", ok, missing)
	}
	if _, err := langfuse.New(langfuse.Options{Host: "ftp://x", PublicKey: "p", SecretKey: "s"}); err == nil {
		t.Error("a bad host was accepted")
	}
}
