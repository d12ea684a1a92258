package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorBrowser: doctor says whether the browser tool is offered and
// why not.
func TestDoctorBrowser(t *testing.T) {
	tests := []struct {
		name, browser, want string
		chromium            bool // a chromium on PATH
	}{
		{"found on PATH", `{}`, "the browser tool runs ", true},
		{"none on PATH", `{}`, "the browser tool is not offered: no Chromium found on PATH", false},
		{"configured path missing", `{"executablePath": "/nonexistent/chrome"}`, `[RISK] tools.browser.executablePath "/nonexistent/chrome"`, true},
		{"off", `{"enable": false}`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := t.TempDir()
			if tt.chromium {
				if err := os.WriteFile(filepath.Join(bin, "chromium"), []byte("#!/bin/sh\n"), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("PATH", bin)
			cfg := filepath.Join(t.TempDir(), "config.json")
			body := `{"providers": {"openai": {"apiKey": "sk-x-123456"}}, "tools": {"browser": ` + tt.browser + `}}`
			if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			out, _, _ := run(t, "doctor", "--config", cfg)
			if tt.want == "" {
				if strings.Contains(out, "browser tool") {
					t.Errorf("doctor speaks of a browser tool that is off:\n%s", out)
				}
				return
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("doctor output lacks %q:\n%s", tt.want, out)
			}
		})
	}
}
