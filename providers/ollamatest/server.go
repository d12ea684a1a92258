// Package ollamatest runs a real Ollama server for tests, with models
// that answer what a test scripts.
//
// Ollama (github.com/ollama/ollama, built by .ci/run from its Go module,
// which compiles the llama.cpp it vendors) serves GGUF models through
// llama.cpp's runner and applies each model's chat template itself. A test
// writes a tiny deterministic model with WriteModel, creates models from it
// with the chat templates it wants to try (one that lets Ollama parse tool
// calls, one that passes them through as text, and so on) and talks to
// the server through Ollama's OpenAI-compatible endpoint, as nanobot does.
//
// The binary comes from NANOBOT_TEST_OLLAMA or PATH. Without it a test is
// skipped, and fails when the CI environment variable is set (CI builds
// it, so a missing server is a broken CI, not a reason to skip).
//
// Concurrency: a Server's methods may be called from any goroutine.
package ollamatest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/syncbuf"
	"github.com/nanobot-go/nanobot/internal/testproc"
)

// Server is one `ollama serve` process with its own model store.
type Server struct {
	// Addr is 127.0.0.1:port.
	Addr string

	t    testing.TB
	out  syncbuf.Buffer    // the server's log
	mu   sync.Mutex        // guards blob
	blob map[string]string // model file path -> its blob digest
}

// Binary returns the ollama executable, or skips the test without one
// (fails it under CI).
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("NANOBOT_TEST_OLLAMA"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("ollama"); err == nil {
		return p
	}
	testproc.Missing(t, "ollama is not installed (set NANOBOT_TEST_OLLAMA to a built ollama; .ci/run builds one): the tests against a real local model server cannot run")
	return ""
}

// Start starts a server on a free loopback port and stops it when the
// test ends (printing its log if the test failed).
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary(t)
	ports, err := testproc.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])), t: t, blob: map[string]string{}}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(),
		"HOME="+dir,
		"OLLAMA_HOST="+s.Addr,
		"OLLAMA_MODELS="+filepath.Join(dir, "models"),
		"OLLAMA_NOPRUNE=1",
		"OLLAMA_NUM_PARALLEL=1",
		"OLLAMA_KEEP_ALIVE=10m",
	)
	cmd.Stdout, cmd.Stderr = &s.out, &s.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start ollama: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		testproc.Stop(cmd, exited, 10*time.Second)
		if t.Failed() {
			t.Logf("ollama log:\n%s", s.out.String())
		}
	})
	if err := testproc.WaitListening([]string{s.Addr}, exited, 60*time.Second); err != nil {
		t.Fatalf("ollama serve: %v\n%s", err, s.out.String())
	}
	return s
}

// OpenAIBase is the server's OpenAI-compatible API base (…/v1).
func (s *Server) OpenAIBase() string { return "http://" + s.Addr + "/v1" }

// Create makes model name from the GGUF file at path with a chat
// template (Ollama's Go template syntax) and parameters such as
// {"temperature": 0}.
func (s *Server) Create(name, path, template string, params map[string]any) {
	s.t.Helper()
	digest := s.upload(path)
	stream := false
	body, _ := json.Marshal(map[string]any{
		"model": name, "files": map[string]string{filepath.Base(path): digest},
		"template": template, "parameters": params, "stream": &stream,
	})
	if err := s.post("/api/create", body); err != nil {
		s.t.Fatalf("create model %s: %v", name, err)
	}
}

// upload sends the file as a blob once and returns its digest.
func (s *Server) upload(path string) string {
	s.t.Helper()
	s.mu.Lock()
	d, ok := s.blob[path]
	s.mu.Unlock()
	if ok {
		return d
	}
	b, err := os.ReadFile(path)
	if err != nil {
		s.t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	d = "sha256:" + hex.EncodeToString(sum[:])
	if err := s.post("/api/blobs/"+d, b); err != nil {
		s.t.Fatalf("upload %s: %v", path, err)
	}
	s.mu.Lock()
	s.blob[path] = d
	s.mu.Unlock()
	return d
}

func (s *Server) post(path string, body []byte) error {
	resp, err := http.Post("http://"+s.Addr+path, "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s: %s", path, resp.Status, bytes.TrimSpace(b))
	}
	return nil
}

// ModelFile writes a model for steps (see WriteModel) into a temporary
// folder of the test and returns its path.
func ModelFile(t testing.TB, steps []Step) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "steps.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteModel(f, steps); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// Template is an Ollama chat template that ends the prompt with marker,
// or with AfterTool once the last message is a tool result; it renders
// nothing else. It names .Tools, so Ollama accepts tools for the model.
// With parseCalls it also renders .ToolCalls as Hermes tags, which is how
// Ollama learns to parse <tool_call> out of an answer; without it Ollama
// passes a model's calls through as text, as it does for any template it
// cannot read them from.
func Template(marker string, parseCalls bool) string {
	calls := ""
	if parseCalls {
		calls = `{{- if .ToolCalls }}{{ range .ToolCalls }}<tool_call>{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}</tool_call>{{ end }}{{ end }}`
	}
	return `{{- if .Tools }}{{ end }}{{- $last := "" }}{{- range .Messages }}{{ $last = .Role }}` + calls +
		`{{ end }}{{ if eq $last "tool" }}` + AfterTool + `{{ else }}` + marker + `{{ end }}`
}

// AfterTool is the marker Template ends a prompt with after a tool result.
const AfterTool = "<|after-tool|>"
