package mcp

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/testproc"
	"github.com/nanobot-go/nanobot/internal/untrusted"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/openai"
	"github.com/nanobot-go/nanobot/providers/providertest"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// The tests run real MCP servers from npm, installed by .ci/run into
// $NANOBOT_TEST_MCP_DIR (default ~/.cache/nanobot-ci/mcp).
func npmDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("NANOBOT_TEST_MCP_DIR")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "nanobot-ci", "mcp")
	}
	_, errEv := os.Stat(filepath.Join(dir, everythingJS))
	_, errNode := exec.LookPath("node")
	if errEv != nil || errNode != nil {
		testproc.Missing(t, "MCP test servers are not installed in %s (run .ci/run, or npm install @modelcontextprotocol/server-everything @modelcontextprotocol/server-filesystem there)", dir)
	}
	return dir
}

const (
	everythingJS = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
	filesystemJS = "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
)

// logBuffer collects log output for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// start builds a manager for cfg with a real registry and fast backoff.
func start(t *testing.T, cfg map[string]configs.MCPServerConfig) (*Manager, *tools.Registry, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	reg := tools.NewRegistry(tools.WithLogger(log))
	for name, c := range cfg {
		def := configs.MCPServerDefaults()
		if c.ToolTimeout == 0 {
			c.ToolTimeout = def.ToolTimeout
		}
		if c.EnabledTools == nil {
			c.EnabledTools = def.EnabledTools
		}
		cfg[name] = c
	}
	// The workspace does not exist yet, as on a first start. Servers run
	// under the default sandbox, as in the gateway.
	ws := filepath.Join(t.TempDir(), "workspace")
	m := New(cfg, reg, Options{Log: log, Dir: ws, Writable: []string{ws}, Sandbox: sandbox.ModeAuto, BackoffMin: 50 * time.Millisecond, BackoffMax: 500 * time.Millisecond})
	m.Start(context.Background(), 60*time.Second)
	t.Cleanup(m.Close)
	return m, reg, logs
}

func everythingStdio(dir string) configs.MCPServerConfig {
	return configs.MCPServerConfig{Type: "stdio", Command: "node", Args: []string{filepath.Join(dir, everythingJS), "stdio"}}
}

func call(t *testing.T, reg *tools.Registry, name string, args map[string]any) (tools.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return reg.Execute(ctx, name, args)
}

func TestStdioEverything(t *testing.T) {
	dir := npmDir(t)
	m, reg, logs := start(t, map[string]configs.MCPServerConfig{"everything": everythingStdio(dir)})
	st := m.Status()
	if len(st) != 1 || st[0].State != StateConnected || st[0].Tools == 0 || st[0].Restarts != 0 {
		t.Fatalf("status %+v, want connected with tools; log:\n%s", st, logs)
	}
	for _, want := range []string{"mcp_everything_echo", "mcp_everything_get-tiny-image", "mcp_everything_get-sum"} {
		if _, ok := reg.Get(want); !ok {
			t.Errorf("tool %s not registered; have %v", want, reg.Names())
		}
	}

	res, err := call(t, reg, "mcp_everything_echo", map[string]any{"message": "hello from nanobot"})
	if err != nil || !strings.Contains(res.Content, "hello from nanobot") {
		t.Fatalf("echo = %q, %v", res.Content, err)
	}
	if strings.Contains(res.Content, untrusted.Note) {
		t.Error("a local stdio server's output was marked as external")
	}

	res, err = call(t, reg, "mcp_everything_get-tiny-image", nil)
	if err != nil {
		t.Fatalf("image tool: %v", err)
	}
	if len(res.Images) != 1 || res.Images[0].MIMEType != "image/png" || !bytes.HasPrefix(res.Images[0].Data, []byte("\x89PNG")) {
		t.Fatalf("image result: %d images %+v", len(res.Images), res.Images)
	}

	// Arguments are cast by the registry before they reach the server:
	// numbers given as strings still add up.
	res, err = call(t, reg, "mcp_everything_get-sum", map[string]any{"a": "2", "b": 40})
	if err != nil || !strings.Contains(res.Content, "42") {
		t.Fatalf("get-sum = %q, %v", res.Content, err)
	}

	// Bad arguments come back to the model as a readable error.
	if _, err := call(t, reg, "mcp_everything_get-sum", map[string]any{"a": "x"}); err == nil {
		t.Error("get-sum with a non-number succeeded")
	}
}

func TestStructuredContentIsReadable(t *testing.T) {
	dir := npmDir(t)
	_, reg, _ := start(t, map[string]configs.MCPServerConfig{"everything": everythingStdio(dir)})
	res, err := call(t, reg, "mcp_everything_get-structured-content", map[string]any{"location": "New York"})
	if err != nil {
		t.Fatalf("structured: %v", err)
	}
	if !strings.Contains(res.Content, "temperature") {
		t.Fatalf("structured content not shown: %q", res.Content)
	}
}

// httpServer starts server-everything in an HTTP mode on a free port.
func httpServer(t *testing.T, dir, mode string) string {
	base, _ := httpServerLog(t, dir, mode)
	return base
}

func httpServerLog(t *testing.T, dir, mode string) (string, *logBuffer) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("node", filepath.Join(dir, everythingJS), mode)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	out := &logBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return "http://" + addr, out
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything %s did not listen: %s", mode, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHTTPTransports(t *testing.T) {
	dir := npmDir(t)
	for _, tc := range []struct{ mode, typ, path string }{
		{"streamableHttp", "streamableHttp", "/mcp"},
		{"sse", "sse", "/sse"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			base, out := httpServerLog(t, dir, tc.mode)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("server output:\n%s", out)
				}
			})
			m, reg, logs := start(t, map[string]configs.MCPServerConfig{"remote": {Type: tc.typ, URL: base + tc.path, Headers: map[string]string{"X-Test": "1"}}})
			if st := m.Status(); st[0].State != StateConnected {
				t.Fatalf("status %+v; log:\n%s", st, logs)
			}
			res, err := call(t, reg, "mcp_remote_echo", map[string]any{"message": "over " + tc.typ})
			if err != nil || !strings.Contains(res.Content, "over "+tc.typ) {
				t.Fatalf("echo = %q, %v", res.Content, err)
			}
			if !strings.HasPrefix(res.Content, untrusted.Note) {
				t.Errorf("remote server output not marked as external content: %q", res.Content)
			}
		})
	}
}

func TestFilesystemServer(t *testing.T) {
	dir := npmDir(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("the answer is 42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Cwd: the sandbox lets a server read its working folder.
	_, reg, logs := start(t, map[string]configs.MCPServerConfig{"fs": {Type: "stdio", Command: "node", Cwd: root, Args: []string{filepath.Join(dir, filesystemJS), root}}})
	name := "mcp_fs_read_text_file"
	if _, ok := reg.Get(name); !ok {
		t.Fatalf("%s not registered; have %v; log:\n%s", name, reg.Names(), logs)
	}
	res, err := call(t, reg, name, map[string]any{"path": filepath.Join(root, "notes.txt")})
	if err != nil || !strings.Contains(res.Content, "the answer is 42") {
		t.Fatalf("read = %q, %v", res.Content, err)
	}
	// Outside its root the server refuses, and the refusal reaches the model.
	if _, err := call(t, reg, name, map[string]any{"path": "/etc/hostname"}); err == nil || !strings.Contains(strings.ToLower(err.Error()), "denied") {
		t.Errorf("read outside the root: %v", err)
	}
	// Its stderr went to the log.
	if !strings.Contains(logs.String(), "mcp server stderr") {
		t.Errorf("no stderr lines logged:\n%s", logs)
	}
}

func TestStdioServerKilledIsRestarted(t *testing.T) {
	dir := npmDir(t)
	m, reg, _ := start(t, map[string]configs.MCPServerConfig{"everything": everythingStdio(dir)})
	if _, err := call(t, reg, "mcp_everything_echo", map[string]any{"message": "before"}); err != nil {
		t.Fatal(err)
	}
	p := m.process("everything")
	if p == nil {
		t.Fatal("no process")
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	// In the sandbox's PID namespace the server dies a moment after the
	// helper (its init); a call in that moment would still be answered.
	waitfor.True(t, "the loss of the server", func() bool {
		st := m.Status()[0]
		return st.Restarts >= 1 || st.State != StateConnected
	})
	// The next call waits for the restart and succeeds.
	res, err := call(t, reg, "mcp_everything_echo", map[string]any{"message": "after"})
	if err != nil || !strings.Contains(res.Content, "after") {
		t.Fatalf("call after kill = %q, %v", res.Content, err)
	}
	if q := m.process("everything"); q == nil || q.Pid == p.Pid {
		t.Errorf("not a new process: %v", q)
	}
	if st := m.Status()[0]; st.Restarts < 1 || st.State != StateConnected {
		t.Errorf("status after restart %+v", st)
	}
}

func TestToolTimeout(t *testing.T) {
	dir := npmDir(t)
	c := everythingStdio(dir)
	c.ToolTimeout = 1
	_, reg, _ := start(t, map[string]configs.MCPServerConfig{"everything": c})
	began := time.Now()
	_, err := call(t, reg, "mcp_everything_trigger-long-running-operation", map[string]any{"duration": 20, "steps": 2})
	if err == nil || !strings.Contains(err.Error(), "timed out after 1s") {
		t.Fatalf("long call: %v", err)
	}
	if took := time.Since(began); took > 15*time.Second {
		t.Errorf("timeout took %s", took)
	}
	// The server is still usable.
	if _, err := call(t, reg, "mcp_everything_echo", map[string]any{"message": "still here"}); err != nil {
		t.Errorf("after timeout: %v", err)
	}
}

func TestEnabledTools(t *testing.T) {
	dir := npmDir(t)
	for _, tc := range []struct {
		name    string
		enabled []string
		want    []string
	}{
		{"raw and full names", []string{"echo", "mcp_everything_get-sum"}, []string{"mcp_everything_echo", "mcp_everything_get-sum"}},
		{"none", []string{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := everythingStdio(dir)
			c.EnabledTools = tc.enabled
			m, reg, _ := start(t, map[string]configs.MCPServerConfig{"everything": c})
			var got []string
			for _, n := range reg.Names() {
				if strings.HasPrefix(n, "mcp_") {
					got = append(got, n)
				}
			}
			sort.Strings(got)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("registered %v, want %v", got, tc.want)
			}
			if st := m.Status()[0]; st.State != StateConnected || st.Tools != len(tc.want) {
				t.Errorf("status %+v", st)
			}
		})
	}
}

func TestUnreachableServerIsReportedAndAgentRunsOn(t *testing.T) {
	m, reg, logs := start(t, map[string]configs.MCPServerConfig{"gone": {Type: "stdio", Command: "/nonexistent/mcp-server"}})
	st := m.Status()[0]
	if st.State == StateConnected || st.LastError == "" {
		t.Fatalf("status %+v, want a failure with its reason", st)
	}
	if len(reg.Names()) != 0 {
		t.Errorf("tools registered for a dead server: %v", reg.Names())
	}
	waitfor.True(t, "a retry", func() bool { return m.Status()[0].Restarts >= 2 })
	if !strings.Contains(logs.String(), "mcp server unavailable") {
		t.Errorf("failure not logged:\n%s", logs)
	}
}

func TestToolName(t *testing.T) {
	for _, tc := range []struct{ server, tool, want string }{
		{"fs", "read_file", "mcp_fs_read_file"},
		{"my server", "do.thing/now", "mcp_my_server_do_thing_now"},
		{"everything", "get-tiny-image", "mcp_everything_get-tiny-image"},
	} {
		if got := ToolName(tc.server, tc.tool); got != tc.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
	}
	long := ToolName("a-very-long-server-name-indeed", "and-an-even-longer-tool-name-that-goes-on-and-on")
	other := ToolName("a-very-long-server-name-indeed", "and-an-even-longer-tool-name-that-goes-on-and-off")
	if len(long) > 64 || long == other {
		t.Errorf("long names: %q (%d), %q", long, len(long), other)
	}
}

// TestAgentUsesMCPTool runs a turn of the real agent runner against a
// scripted LLM that asks for an MCP tool on the real server; the final
// answer carries the tool's output.
func TestAgentUsesMCPTool(t *testing.T) {
	dir := npmDir(t)
	_, reg, _ := start(t, map[string]configs.MCPServerConfig{"everything": everythingStdio(dir)})
	llm := providertest.New(t)
	llm.Handle(func(r providertest.Request) providertest.Reply {
		msgs, _ := r.Body["messages"].([]any)
		last, _ := msgs[len(msgs)-1].(map[string]any)
		if last["role"] == "tool" {
			return providertest.Reply{Text: fmt.Sprintf("The server said: %v", last["content"])}
		}
		return providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "mcp_everything_get-sum", Arguments: `{"a": 19, "b": 23}`}}}
	})
	p, err := openai.New(openai.Options{Endpoint: providers.Endpoint{APIBase: llm.OpenAIBase()}})
	if err != nil {
		t.Fatal(err)
	}
	r := &agent.Runner{Provider: p, Tools: reg, Model: "test", Stream: true}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := r.Run(ctx, []providers.Message{{Role: "user", Content: "what is 19+23? use the tool"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Content, "42") {
		t.Fatalf("final answer %q lacks the tool's output", res.Content)
	}
	// The model was offered the tool with its schema.
	first := llm.Requests()[0].Body
	if !strings.Contains(fmt.Sprint(first["tools"]), "mcp_everything_get-sum") {
		t.Errorf("tool not offered: %v", first["tools"])
	}
}
