package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/tools/sandbox/sandboxtest"
)

// An MCP stdio server is started through the same sandbox as exec: a
// filesystem server told it may serve "/" still cannot read the gateway's
// config, the sessions or another user's files, nor write outside the
// workspace, under each mode this machine provides (landlock, bwrap). The
// same server unconfined can (the control).
func TestBatteryMCPServer(t *testing.T) {
	dir := npmDir(t)
	secrets := t.TempDir()
	config := filepath.Join(secrets, ".nanobot", "config.json")
	other := filepath.Join(secrets, "someone-else", "diary.txt")
	for _, p := range []string{config, other} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("BATTERY-SECRET"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(secrets, "written-by-the-server.txt")
	server := func(mode string) configs.MCPServerConfig {
		return configs.MCPServerConfig{Type: "stdio", Command: "node", Sandbox: mode, Args: []string{filepath.Join(dir, filesystemJS), "/"}}
	}
	check := func(t *testing.T, mode string) {
		_, reg, logs := start(t, map[string]configs.MCPServerConfig{"fs": server(mode)})
		if _, ok := reg.Get("mcp_fs_read_text_file"); !ok {
			t.Fatalf("sandbox %q: the server did not start; log:\n%s", mode, logs)
		}
		for _, p := range []string{config, other} {
			res, err := call(t, reg, "mcp_fs_read_text_file", map[string]any{"path": p})
			leaked := err == nil && strings.Contains(res.Content, "BATTERY-SECRET")
			switch {
			case mode == "none" && !leaked:
				t.Fatalf("unconfined, the server cannot read %s (%v): the case does not work", p, err)
			case mode != "none" && leaked:
				t.Errorf("under the %s sandbox the server read %s", mode, p)
			}
		}
		_, err := call(t, reg, "mcp_fs_write_file", map[string]any{"path": outside, "content": "x"})
		_, statErr := os.Stat(outside)
		switch {
		case mode == "none" && (err != nil || statErr != nil):
			t.Fatalf("unconfined, the server cannot write (%v)", err)
		case mode != "none" && statErr == nil:
			t.Errorf("under the %s sandbox the server wrote outside the workspace", mode)
		}
		os.Remove(outside)
	}
	t.Run("none", func(t *testing.T) { check(t, "none") })
	for _, mode := range sandboxtest.ConfiningModes {
		t.Run(string(mode), func(t *testing.T) {
			sandboxtest.Require(t, mode)
			check(t, string(mode))
		})
	}
}
