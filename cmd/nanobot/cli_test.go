package main

import (
	"bytes"
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// run executes the CLI in-process and returns stdout, stderr and the error
// main would print.
func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errb.String(), err
}

// snapshot hashes every file under dir.
func snapshot(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	m := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		m[p] = sha256.Sum256(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOnboardIdempotent(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	out, _, err := run(t, "onboard", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "created config") || !strings.Contains(out, "created SOUL.md") {
		t.Errorf("first onboard output:\n%s", out)
	}
	fi, err := os.Stat(cfg)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config: %v, mode %v", err, fi)
	}

	// The user edits a template and the config.
	soul := filepath.Join(dir, "workspace", "SOUL.md")
	if err := os.WriteFile(soul, []byte("edited"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(cfg)
	edited := strings.Replace(string(b), `"port": 18790`, `"port": 18791`, 1)
	if err := os.WriteFile(cfg, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}

	before := snapshot(t, dir)
	out, _, err = run(t, "onboard", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "created") {
		t.Errorf("second onboard created something:\n%s", out)
	}
	after := snapshot(t, dir)
	if len(before) != len(after) {
		t.Errorf("file count changed: %d -> %d", len(before), len(after))
	}
	for p, h := range before {
		if after[p] != h {
			t.Errorf("second onboard changed %s", p)
		}
	}
}

// onboard never writes an existing config, even one with keys in older
// places: it names them and the command that moves them.
func TestOnboardLeavesOldKeysInPlace(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	orig := []byte(`{"tools": {"exec": {"restrictToWorkspace": false}}, "agents": {"defaults": {"memoryWindow": 50}}}`)
	if err := os.WriteFile(cfg, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "onboard", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"left as is", "tools.exec.restrictToWorkspace -> tools.restrictToWorkspace", "nanobot migrate --from-python --write"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(cfg); !bytes.Equal(b, orig) {
		t.Errorf("onboard rewrote an existing config:\n%s", b)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "config.json*")); len(m) != 1 {
		t.Errorf("files beside the config: %v", m)
	}
}

func TestMalformedConfigFailsEveryCommand(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"syntax": `{"agents": {`,
		"type":   `{"channels": {"telegram": {"allowFrom": ["a", 1]}}}`,
	} {
		cfg := filepath.Join(dir, name+".json")
		if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, sub := range []string{"onboard", "status", "version", "agent", "gateway"} {
			_, _, err := run(t, sub, "--config", cfg)
			if err == nil {
				t.Errorf("%s with %s config: want error", sub, name)
				continue
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "config "+cfg+": ") || strings.Contains(msg, "\n") {
				t.Errorf("%s: error %q does not name the file on one line", sub, msg)
			}
			if name == "type" && !strings.Contains(msg, "channels.telegram.allowFrom[1]: want string, got number") {
				t.Errorf("%s: error %q does not name the JSON path", sub, msg)
			}
		}
	}
}

func TestStatusNeverPrintsKeys(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	const key = "sk-test-0123456789abcdef"
	body := `{"providers": {"openrouter": {"apiKey": "` + key + `"}, "ollama": {"apiBase": "http://127.0.0.1:11434/v1"}},
	  "agents": {"defaults": {"provider": "openrouter"}},
	  "channels": {"telegram": {"enabled": true, "allowFrom": ["1"], "token": "123456:abcdefghijk"}}}`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(t, "status", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{key, "abcdefghijk"} {
		if strings.Contains(out+errOut, leak) {
			t.Errorf("status leaks %q:\n%s%s", leak, out, errOut)
		}
	}
	for _, want := range []string{"openrouter   key set", "ollama       no key, apiBase http://127.0.0.1:11434/v1", "telegram     enabled, 1 allowed sender(s)", "web          on by default", "provider:   openrouter"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}

func TestVersion(t *testing.T) {
	out, _, err := run(t, "version", "--config", filepath.Join(t.TempDir(), "none.json"))
	if err != nil || !strings.HasPrefix(out, "nanobot ") {
		t.Errorf("version: %q %v", out, err)
	}
}

func TestStatusShowsResponsesAPI(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.json")
	body := `{"providers": {"openai": {"apiKey": "sk-test-0123456789", "apiType": "responses"}}, "agents": {"defaults": {"model": "gpt-5"}}}`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "status", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `sends model "gpt-5" to https://api.openai.com/v1 through the Responses API)`) {
		t.Errorf("status does not name the Responses API:\n%s", out)
	}
}

// A terminal agent without a usable provider says how to add a key and
// stops, instead of starting a conversation whose every turn fails.
func TestAgentWithoutProviderSaysHow(t *testing.T) {
	for _, k := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY"} {
		t.Setenv(k, "")
	}
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"agent", "-m", "hello"}, {"agent"}} {
		_, _, err := run(t, append([]string{"--config", cfg}, args...)...)
		if err == nil || !strings.Contains(err.Error(), "No LLM provider is configured yet") || !strings.Contains(err.Error(), "nanobot agent") {
			t.Errorf("%v: err = %v, want the setup message", args, err)
		} else if strings.Contains(err.Error(), "reported an error") {
			t.Errorf("%v: a turn ran and failed (%v); want the message before any turn", args, err)
		}
	}
}

// TestStatusSaysHowRecallRanks: status names the embedding model and its
// endpoint when memory.embeddingModel is set, and says words otherwise.
func TestStatusSaysHowRecallRanks(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	body := `{"providers": {"ollama": {"apiBase": "http://127.0.0.1:11434/v1"}},
	  "agents": {"defaults": {"memory": {"embeddingModel": "nomic-embed-text", "embeddingProvider": "ollama"}}}}`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "status", "--config", cfg)
	if err != nil || !strings.Contains(out, "recall:     memory_search by words and meaning: embeddings from nomic-embed-text (ollama) at http://127.0.0.1:11434/v1/embeddings") {
		t.Errorf("status with an embedding model (%v):\n%s", err, out)
	}
	out, _, err = run(t, "status", "--config", filepath.Join(dir, "none.json"))
	if err != nil || !strings.Contains(out, "recall:     memory_search by words (") {
		t.Errorf("status without one (%v):\n%s", err, out)
	}
}

// pflag reads a `quoted` word in a flag's usage as the name of its value;
// prose in backticks there would print as that name in --help.
func TestFlagValueNamesAreWords(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if name, _ := pflag.UnquoteUsage(f); strings.ContainsAny(name, " |") {
				t.Errorf("%s --%s: value name %q (backticks in its usage)", c.CommandPath(), f.Name, name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
}
