package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/nanobot-go/nanobot/providers/bedrock/bedrocktest"
)

// TestBedrockFromConfig: a nanobot-shaped providers.bedrock entry routes a
// Bedrock model id to the Converse API (over Anthropic, also configured),
// signs with the environment's AWS keys, and the tokens reach the usage
// ledger.
func TestBedrockFromConfig(t *testing.T) {
	bin := binary(t)
	creds := aws.Credentials{AccessKeyID: "AKIDE2E", SecretAccessKey: "e2e-secret-key"}
	fake := bedrocktest.New(t, creds, "eu-west-1", "")
	const model = "eu.anthropic.claude-sonnet-4-20250514-v1:0"
	fake.Push(bedrocktest.Reply{
		Body: map[string]any{"output": map[string]any{"message": map[string]any{"role": "assistant", "content": []any{map[string]any{"text": "Hello from Bedrock."}}}},
			"stopReason": "end_turn", "usage": map[string]any{"inputTokens": 321, "outputTokens": 7, "totalTokens": 328}},
		Events: []bedrocktest.Event{
			{Type: "messageStart", Payload: map[string]any{"role": "assistant"}},
			{Type: "contentBlockDelta", Payload: map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"text": "Hello from Bedrock."}}},
			{Type: "contentBlockStop", Payload: map[string]any{"contentBlockIndex": 0}},
			{Type: "messageStop", Payload: map[string]any{"stopReason": "end_turn"}},
			{Type: "metadata", Payload: map[string]any{"usage": map[string]any{"inputTokens": 321, "outputTokens": 7, "totalTokens": 328}}},
		},
	})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	body := `{
	  "agents": {"defaults": {"model": "` + model + `"}},
	  "providers": {
	    "anthropic": {"apiKey": "sk-ant-not-used"},
	    "bedrock": {"region": "eu-west-1", "apiBase": "` + fake.URL + `"}
	  },
	  "gateway": {"heartbeat": {"enabled": false}}
	}`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HOME="+dir, "AWS_ACCESS_KEY_ID="+creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+creds.SecretAccessKey,
		"AWS_PROFILE=", "AWS_SESSION_TOKEN=", "AWS_BEARER_TOKEN_BEDROCK=")

	status := exec.Command(bin, "status", "--config", cfg)
	status.Env = env
	out, err := status.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "bedrock") || strings.Contains(string(out), "unknown key") || strings.Contains(string(out), "not supported") {
		t.Errorf("status: %v\n%s", err, out)
	}

	cmd := exec.Command(bin, "agent", "-m", "hello", "--config", cfg)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil || string(out) != "Hello from Bedrock.\n" {
		t.Fatalf("agent -m: %v, stdout %q, stderr:\n%s", err, out, stderr.String())
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || reqs[0].AuthError != "" || reqs[0].ModelID != model {
		t.Fatalf("requests: %+v", reqs)
	}

	usage := exec.Command(bin, "usage", "--by", "model", "--config", cfg)
	usage.Env = env
	out, err = usage.CombinedOutput()
	if err != nil || !strings.Contains(string(out), model) || !strings.Contains(string(out), "321") {
		t.Errorf("usage by model: %v\n%s", err, out)
	}
}
