package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
	"github.com/nanobot-go/nanobot/internal/testproc"
	"github.com/nanobot-go/nanobot/tools/sandbox"
	"github.com/nanobot-go/nanobot/tools/sandbox/sandboxtest"
)

// hookprog is the test hook program, built once by TestMain.
var hookprog string

func TestMain(m *testing.M) {
	// The test binary is the sandbox helper of the programs it runs, as
	// the nanobot executable is the gateway's.
	sandboxtest.ServeIfAsked()
	sandbox.Init()
	dir, err := os.MkdirTemp("", "hookprog")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hookprog = filepath.Join(dir, "hookprog")
	if out, err := exec.Command("go", "build", "-o", hookprog, "./testdata/hookprog").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build hookprog: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func progHook(name, point string, args ...string) configs.HookConfig {
	return configs.HookConfig{Name: name, Points: []string{point}, Command: append([]string{hookprog}, args...)}
}

func newSet(t *testing.T, cfgs ...configs.HookConfig) *Set {
	t.Helper()
	s, err := New(cfgs, Options{Workspace: t.TempDir(), Sandbox: sandbox.ModeNone})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func event(p agent.HookPoint, data map[string]any) agent.HookEvent {
	return agent.HookEvent{Point: p, Session: "telegram:1", Channel: "telegram", Chat: "1", Sender: "42", Data: data}
}

func TestNoHooks(t *testing.T) {
	s, err := New([]configs.HookConfig{{Name: "off", Points: []string{"inbound"}, Command: []string{"x"}, Disabled: true}}, Options{})
	if err != nil || s != nil {
		t.Fatalf("New with only disabled hooks = %v, %v; want nil, nil", s, err)
	}
	if s.Has(agent.HookInbound) {
		t.Fatal("a nil Set listens")
	}
}

// TestProgram: the program's answers, and what its failures mean under
// each policy.
func TestProgram(t *testing.T) {
	text := map[string]any{"text": "my secret plan"}
	cases := []struct {
		name      string
		cfg       configs.HookConfig
		wantVeto  bool
		wantText  string // "" : the data is not modified
		wantFails int64
	}{
		{"continue", progHook("h", "before_reply", "continue"), false, "", 0},
		{"modify", progHook("h", "before_reply", "redact", "secret"), false, "my *** plan", 0},
		{"veto", progHook("h", "before_reply", "veto", "no"), true, "", 0},
		{"crash ignore", progHook("h", "before_reply", "crash"), false, "", 1},
		{"crash block", withPolicy(progHook("h", "before_reply", "crash"), "block"), true, "", 1},
		{"garbage ignore", progHook("h", "before_reply", "garbage"), false, "", 1},
		{"garbage block", withPolicy(progHook("h", "before_reply", "garbage"), "block"), true, "", 1},
		{"missing program", configs.HookConfig{Name: "h", Points: []string{"before_reply"}, Command: []string{"/nonexistent/hook"}, OnFailure: "block"}, true, "", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSet(t, c.cfg)
			v := s.Run(context.Background(), event(agent.HookBeforeReply, text))
			if v.Veto != c.wantVeto {
				t.Errorf("veto %v (%q), want %v", v.Veto, v.Reason, c.wantVeto)
			}
			got, _ := v.Data["text"].(string)
			if got != c.wantText {
				t.Errorf("modified text %q, want %q", got, c.wantText)
			}
			if st := s.Stats()[0]; st.Calls != 1 || st.Failures != c.wantFails {
				t.Errorf("stats %+v, want 1 call, %d failures", st, c.wantFails)
			}
		})
	}
}

func withPolicy(c configs.HookConfig, p string) configs.HookConfig {
	c.OnFailure = p
	return c
}

// TestProgramTimeout: a hook past its timeout is killed; ignore goes on,
// block vetoes, and neither waits for the program's own minute.
func TestProgramTimeout(t *testing.T) {
	for _, policy := range []string{"ignore", "block"} {
		t.Run(policy, func(t *testing.T) {
			cfg := progHook("slow", "before_tool", "sleep")
			cfg.Timeout, cfg.OnFailure = "300ms", policy
			s := newSet(t, cfg)
			start := time.Now()
			v := s.Run(context.Background(), event(agent.HookBeforeTool, map[string]any{"tool": "exec"}))
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("Run took %s with a 300ms timeout", took)
			}
			if want := policy == "block"; v.Veto != want {
				t.Errorf("veto %v, want %v", v.Veto, want)
			}
			if st := s.Stats()[0]; st.Failures != 1 {
				t.Errorf("failures %d, want 1", st.Failures)
			}
		})
	}
}

// TestChain: hooks of a point run in order, each seeing the data as the
// previous one left it; a veto stops the round.
func TestChain(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "seen.json")
	s := newSet(t,
		progHook("add-a", "before_tool", "args", "a", "1"),
		progHook("add-b", "before_tool", "args", "b", "2"),
		progHook("record", "before_tool", "record", rec),
	)
	v := s.Run(context.Background(), event(agent.HookBeforeTool, map[string]any{"tool": "t", "arguments": map[string]any{"x": "0"}}))
	args, _ := v.Data["arguments"].(map[string]any)
	if args["a"] != "1" || args["b"] != "2" || args["x"] != "0" {
		t.Fatalf("arguments %v, want x, a and b", args)
	}
	var req Request
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	if req.Version != Version || req.Point != "before_tool" || req.Hook != "record" || req.Session != "telegram:1" || req.Sender != "42" {
		t.Errorf("request %+v", req)
	}
	if got := req.Data["arguments"].(map[string]any); got["b"] != "2" {
		t.Errorf("the third hook saw %v, want the second's change", got)
	}

	stopped := newSet(t, progHook("no", "before_tool", "veto", "stop"), progHook("record", "before_tool", "record", rec+"2"))
	if v := stopped.Run(context.Background(), event(agent.HookBeforeTool, nil)); !v.Veto || v.Reason != "stop" {
		t.Errorf("verdict %+v, want veto with the reason", v)
	}
	if _, err := os.Stat(rec + "2"); err == nil {
		t.Error("a hook after a veto was asked")
	}
}

// TestProgramEnvironment: a program gets the minimal environment, not
// the gateway's keys, and runs in the workspace.
func TestProgramEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-should-not-leak")
	ws := t.TempDir()
	script := filepath.Join(ws, "env.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\nenv > env.txt\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := New([]configs.HookConfig{{Name: "env", Points: []string{"turn_end"}, Command: []string{"./env.sh"}, OnFailure: "block"}},
		Options{Workspace: ws, Sandbox: sandbox.ModeNone})
	if err != nil {
		t.Fatal(err)
	}
	if v := s.Run(context.Background(), event(agent.HookTurnEnd, nil)); v.Veto {
		t.Fatalf("the hook failed: %s", v.Reason)
	}
	env, err := os.ReadFile(filepath.Join(ws, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), "sk-should-not-leak") {
		t.Error("the gateway's API key reached the hook")
	}
}

// TestHTTP: the request is POSTed with the token; secrets are masked in
// it; the answer modifies; a non-2xx answer is a failure.
func TestHTTP(t *testing.T) {
	type seen struct {
		auth string
		req  Request
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req Request
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &req)
		got <- seen{auth: r.Header.Get("Authorization"), req: req}
		if req.Data["text"] == "fail" {
			http.Error(w, "no", http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(Response{Action: ActionModify, Data: map[string]any{"text": "rewritten"}})
	}))
	defer srv.Close()
	red := redact.New()
	red.Add("hunter2-the-secret")
	s, err := New([]configs.HookConfig{{Name: "web", Points: []string{"before_reply"}, URL: srv.URL, Token: "tok-123456", OnFailure: "block"}},
		Options{Redact: red})
	if err != nil {
		t.Fatal(err)
	}
	v := s.Run(context.Background(), event(agent.HookBeforeReply, map[string]any{"text": "key hunter2-the-secret"}))
	if v.Veto || v.Data["text"] != "rewritten" {
		t.Fatalf("verdict %+v, want the rewrite", v)
	}
	sn := <-got
	if sn.auth != "Bearer tok-123456" {
		t.Errorf("Authorization %q", sn.auth)
	}
	if strings.Contains(fmt.Sprint(sn.req.Data), "hunter2-the-secret") {
		t.Errorf("the hook was sent a secret: %v", sn.req.Data)
	}
	if v := s.Run(context.Background(), event(agent.HookBeforeReply, map[string]any{"text": "fail"})); !v.Veto {
		t.Errorf("an HTTP 500 under block: %+v, want a veto", v)
	}
	<-got
}

func TestDecodeResponse(t *testing.T) {
	for _, c := range []struct {
		in      string
		action  string
		wantErr bool
	}{
		{"", ActionContinue, false},
		{"  \n", ActionContinue, false},
		{`{}`, ActionContinue, false},
		{`{"action":"modify","data":{"text":"x"}}`, ActionModify, false},
		{`{"action":"veto","reason":"r"}`, ActionVeto, false},
		{`{"action":"explode"}`, "", true},
		{`not json`, "", true},
	} {
		r, err := decodeResponse([]byte(c.in))
		if (err != nil) != c.wantErr || r.Action != c.action {
			t.Errorf("decode %q = %+v, %v; want action %q, error %v", c.in, r, err, c.action, c.wantErr)
		}
	}
}

// BenchmarkProgramHook is one call of a program hook that answers
// continue: the per-hook overhead of the program kind (no sandbox).
func BenchmarkProgramHook(b *testing.B) {
	s, err := New([]configs.HookConfig{{Name: "noop", Points: []string{"before_tool"}, Command: []string{hookprog, "continue"}, OnFailure: "block"}},
		Options{Workspace: b.TempDir(), Sandbox: sandbox.ModeNone})
	if err != nil {
		b.Fatal(err)
	}
	ev := event(agent.HookBeforeTool, map[string]any{"tool": "exec", "arguments": map[string]any{"command": "ls"}})
	for b.Loop() {
		if v := s.Run(context.Background(), ev); v.Veto {
			b.Fatal(v.Reason)
		}
	}
}

// BenchmarkHTTPHook is one call of an HTTP hook on loopback that answers
// continue.
func BenchmarkHTTPHook(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte(`{"action":"continue"}`))
	}))
	defer srv.Close()
	s, err := New([]configs.HookConfig{{Name: "noop", Points: []string{"before_tool"}, URL: srv.URL, OnFailure: "block"}}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	ev := event(agent.HookBeforeTool, map[string]any{"tool": "exec", "arguments": map[string]any{"command": "ls"}})
	for b.Loop() {
		if v := s.Run(context.Background(), ev); v.Veto {
			b.Fatal(v.Reason)
		}
	}
}

// TestProgramSandboxed: under the exec sandbox a hook program kept outside
// the workspace still runs (its folder is readable to it), and what it
// tries to write outside the workspace is refused.
func TestProgramSandboxed(t *testing.T) {
	if strings.HasPrefix(sandbox.Describe(sandbox.ModeAuto), "none") {
		testproc.Missing(t, "no sandbox (landlock or bwrap) on this machine")
	}
	hooksDir, elsewhere := t.TempDir(), t.TempDir()
	script := filepath.Join(hooksDir, "hook.sh")
	body := "#!/bin/sh\ncat >/dev/null\ntouch " + filepath.Join(elsewhere, "escaped") + " 2>/dev/null\necho '{\"action\":\"modify\",\"data\":{\"text\":\"checked\"}}'\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	// The interpreter form: the script is an argument, not the program.
	s, err := New([]configs.HookConfig{{Name: "boxed", Points: []string{"before_reply"}, Command: []string{"/bin/sh", script}, OnFailure: "block"}},
		Options{Workspace: t.TempDir(), Sandbox: sandbox.ModeAuto})
	if err != nil {
		t.Fatal(err)
	}
	v := s.Run(context.Background(), event(agent.HookBeforeReply, map[string]any{"text": "hello"}))
	if v.Veto {
		t.Fatalf("the sandboxed hook failed: %s", v.Reason)
	}
	if got, _ := v.Data["text"].(string); got != "checked" {
		t.Errorf("the hook's answer: %+v", v)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "escaped")); err == nil {
		t.Error("a sandboxed hook wrote outside the workspace")
	}
}
