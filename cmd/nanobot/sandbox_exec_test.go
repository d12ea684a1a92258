package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/tools/sandbox"
)

func TestSandboxExecCommand(t *testing.T) {
	// Neither runs a program (that would replace the test process): help
	// exits 0, a bad mode exits 2, and no config is needed for either.
	if _, _, err := run(t, "sandbox-exec", "--config", "/no/such/config.json", "--help"); err == nil || !strings.Contains(err.Error(), "exit status 2") {
		// --config is not the helper's flag: usage error.
		t.Errorf("sandbox-exec --config: %v, want exit status 2", err)
	}
	if _, _, err := run(t, "sandbox-exec", "--help"); err != nil {
		t.Errorf("sandbox-exec --help: %v", err)
	}
	var code exitError
	if _, _, err := run(t, "sandbox-exec", "--mode=docker", "--", "true"); !errors.As(err, &code) || code != 2 {
		t.Errorf("bad mode: %v, want exit 2", err)
	}
	root, _, _ := run(t, "--help")
	if strings.Contains(root, "sandbox-exec") {
		t.Error("the helper is listed in the help")
	}
}

func TestStatusAndDoctorShowSandbox(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	tests := []struct {
		name, body, status, doctor string
	}{
		{"auto", `{"tools": {"exec": {"network": false}}}`, "", ""},
		{"off", `{"tools": {"exec": {"sandbox": "none"}}}`, "none (warning: turned off", `sandbox is "none"`},
		{"mcp opt-out", `{"tools": {"mcpServers": {"fs": {"command": "npx", "sandbox": "none"}}}}`, "", `tools.mcpServers.fs.sandbox is "none"`},
	}
	best := sandbox.Detect().Best()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(cfg, []byte(tt.body), 0o600); err != nil {
				t.Fatal(err)
			}
			status, doctor := tt.status, tt.doctor
			if status == "" {
				switch best {
				case sandbox.ModeNone:
					status, doctor = "none (warning: no OS sandbox", "no OS sandbox is available"
				default:
					status = string(best) + ", network "
					if doctor == "" {
						doctor = "run confined: " + string(best)
					}
				}
				if tt.name == "auto" && best != sandbox.ModeNone {
					status += "off"
				}
			}
			out, _, err := run(t, "status", "--config", cfg)
			if err != nil || !strings.Contains(out, "sandbox:    "+status) {
				t.Errorf("status: %v, want sandbox line %q:\n%s", err, status, out)
			}
			out, _, _ = run(t, "doctor", "--config", cfg)
			if !strings.Contains(out, doctor) {
				t.Errorf("doctor lacks %q:\n%s", doctor, out)
			}
		})
	}
}
