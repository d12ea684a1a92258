package gateway

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The official Node SDK (npm "openai", installed by .ci/run into
// NANOBOT_TEST_NODE_MODULES) drives the same calls as the Go client:
// models, a completion, a stream with usage, an unknown model.
func TestAPIWithNodeSDK(t *testing.T) {
	mods := os.Getenv("NANOBOT_TEST_NODE_MODULES")
	node, err := exec.LookPath("node")
	if mods == "" || err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI needs node and NANOBOT_TEST_NODE_MODULES (set by .ci/run)")
		}
		t.Skip("node or NANOBOT_TEST_NODE_MODULES missing")
	}
	if _, err := os.Stat(filepath.Join(mods, "openai", "package.json")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the openai npm package is not in %s", mods)
		}
		t.Skipf("the openai npm package is not in %s", mods)
	}
	llm := newAPILLM()
	llm.pause = 30 * time.Millisecond // words far enough apart to stream as several chunks
	r := startGateway(t, apiConfig(), llm)
	out, err := exec.CommandContext(t.Context(), node, filepath.Join("testdata", "openai_client.cjs"), mods, "http://"+r.addr+"/v1").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node client: %v\n%s", err, stderr)
	}
	var got struct {
		IDs    []string `json:"ids"`
		Answer string   `json:"answer"`
		Usage  struct {
			Total int `json:"total_tokens"`
		} `json:"usage"`
		Streamed    string `json:"streamed"`
		Chunks      int    `json:"chunks"`
		StreamUsage *struct {
			Total int `json:"total_tokens"`
		} `json:"streamUsage"`
		NotFound int `json:"notFound"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node output %q: %v", out, err)
	}
	if len(got.IDs) != 1 || got.IDs[0] != "test-model" {
		t.Errorf("models %v, want [test-model]", got.IDs)
	}
	if got.Answer != "echo: hello from node" || got.Usage.Total != 13 {
		t.Errorf("completion %q with %d tokens, want the echo with 13", got.Answer, got.Usage.Total)
	}
	if got.Streamed != "echo: stream to node" || got.Chunks < 2 || got.StreamUsage == nil || got.StreamUsage.Total != 13 {
		t.Errorf("stream %q in %d chunks, usage %+v; want the echo in several chunks with 13 tokens", got.Streamed, got.Chunks, got.StreamUsage)
	}
	if got.NotFound != 404 {
		t.Errorf("unknown model: status %d, want 404", got.NotFound)
	}
}
