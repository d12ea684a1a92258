package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestLangfuseTracesAgentTurn: with the LANGFUSE_* variables set, a turn
// of `nanobot agent -m` reaches a (local) Langfuse ingestion endpoint as a
// trace and a generation with the model and its tokens, sent before exit.
func TestLangfuseTracesAgentTurn(t *testing.T) {
	bin := binary(t)
	var (
		mu     sync.Mutex
		events []map[string]any
		auth   []string
	)
	lf := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		var body struct {
			Batch []map[string]any `json:"batch"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		auth = append(auth, r.URL.Path+" "+user+":"+pass)
		events = append(events, body.Batch...)
		mu.Unlock()
		w.WriteHeader(http.StatusMultiStatus)
		_, _ = w.Write([]byte(`{"successes":[],"errors":[]}`))
	}))
	defer lf.Close()

	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "Traced reply."})
	cfg := localConfig(t, srv, freePort(t))
	cmd := exec.Command(bin, "agent", "-m", "hello", "--config", cfg)
	cmd.Env = append(os.Environ(), "LANGFUSE_PUBLIC_KEY=pk-lf-e2e", "LANGFUSE_SECRET_KEY=sk-lf-e2e", "LANGFUSE_BASE_URL="+lf.URL, "LANGFUSE_HOST=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || string(out) != "Traced reply.\n" {
		t.Fatalf("agent -m: %v, %q\n%s", err, out, stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	var trace, gen map[string]any
	for _, e := range events {
		switch e["type"] {
		case "trace-create":
			trace = e["body"].(map[string]any)
		case "generation-create":
			gen = e["body"].(map[string]any)
		}
	}
	if trace == nil || gen == nil {
		t.Fatalf("events sent before exit: %v (stderr:\n%s)", events, stderr.String())
	}
	if gen["traceId"] != trace["id"] || gen["model"] != "test-model" {
		t.Errorf("generation %v, trace %v", gen, trace)
	}
	if len(auth) == 0 || auth[0] != "/api/public/ingestion pk-lf-e2e:sk-lf-e2e" {
		t.Errorf("requests %q", auth)
	}
	if strings.Contains(stderr.String(), "sk-lf-e2e") {
		t.Errorf("the secret key is in the output:\n%s", stderr.String())
	}
}
