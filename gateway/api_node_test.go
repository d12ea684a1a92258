package gateway

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/testproc"
)

// The official Node SDK (npm "openai", installed by .ci/run into
// NANOBOT_TEST_NODE_MODULES) drives the same calls as the Go client:
// models, a completion, a stream with usage, an unknown model, and
// responses (one, one continuing it, one streamed).
func TestAPIWithNodeSDK(t *testing.T) {
	mods := os.Getenv("NANOBOT_TEST_NODE_MODULES")
	node, err := exec.LookPath("node")
	if mods == "" || err != nil {
		testproc.Missing(t, "node or NANOBOT_TEST_NODE_MODULES is missing (.ci/run installs node and sets it)")
	}
	if _, err := os.Stat(filepath.Join(mods, "openai", "package.json")); err != nil {
		testproc.Missing(t, "the openai npm package is not in %s", mods)
	}
	llm := newAPILLM()
	llm.pause = 30 * time.Millisecond // words far enough apart to stream as several chunks
	r := startGateway(t, apiConfig(), llm)
	cmd := exec.CommandContext(t.Context(), node, filepath.Join("testdata", "openai_client.cjs"), mods, "http://"+r.addr+"/v1")
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY="+r.token(t)) // the key, not on the command line
	out, err := cmd.Output()
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
		Response struct {
			ID    string `json:"id"`
			Text  string `json:"text"`
			Usage struct {
				Total int `json:"total_tokens"`
			} `json:"usage"`
		} `json:"response"`
		Next struct {
			Previous string `json:"previous"`
			Text     string `json:"text"`
		} `json:"next"`
		ResponseStream struct {
			Events []string `json:"events"`
			Deltas string   `json:"deltas"`
			Text   string   `json:"text"`
			Status string   `json:"status"`
		} `json:"responseStream"`
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
	if got.Response.Text != "echo: respond to node" || got.Response.Usage.Total != 13 {
		t.Errorf("response %q with %d tokens, want the echo with 13", got.Response.Text, got.Response.Usage.Total)
	}
	if got.Next.Previous != got.Response.ID || got.Next.Text != "echo: and again" {
		t.Errorf("continued response: previous %q text %q, want %q and the echo", got.Next.Previous, got.Next.Text, got.Response.ID)
	}
	rs := got.ResponseStream
	wantEvents := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if !slices.Equal(rs.Events, wantEvents) || rs.Deltas != "echo: stream a response" || rs.Text != rs.Deltas || rs.Status != "completed" {
		t.Errorf("streamed response: events %q, deltas %q, text %q, status %q", rs.Events, rs.Deltas, rs.Text, rs.Status)
	}
}
