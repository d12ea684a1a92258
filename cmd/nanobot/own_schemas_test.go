package main

import (
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/cron"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/browser"
	"github.com/nanobot-go/nanobot/tools/shell"
)

// TestOwnToolSchemasCompile compiles the parameter schema of every
// built-in tool the gateway registers. They are registered with
// RegisterOwn, which leaves the compile to the first call: this test is
// what stands behind that.
func TestOwnToolSchemasCompile(t *testing.T) {
	cfg := configs.Default()
	cfg.Agents.Defaults.Workspace = t.TempDir()
	l := configs.Loaded{Config: cfg, Paths: configs.PathsFor(filepath.Join(t.TempDir(), "config.json"), &cfg)}
	a := &app{loaded: &l, log: slog.New(slog.DiscardHandler)}
	// The browser tool is offered only where Chromium is; its schema is
	// checked everywhere (New starts nothing).
	b, err := browser.New(browser.Options{ExecPath: "chromium", ProfileDir: t.TempDir(), OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a.browser = b
	reg, err := a.toolRegistry(cron.NewStore(filepath.Join(t.TempDir(), "jobs.json")), shell.NewSessions(shell.SessionOptions{}), cfg.Agents.Defaults.Workspace, "none")
	if err != nil {
		t.Fatal(err)
	}
	defs := reg.Definitions()
	if !hasTool(defs, "browser") {
		t.Error("the browser tool is not registered")
	}
	if len(defs) < 8 {
		t.Fatalf("only %d built-in tools registered", len(defs))
	}
	for _, d := range defs {
		if _, err := tools.CompileSchema(d.Parameters); err != nil {
			t.Errorf("%s: %v", d.Name, err)
		}
	}
}

func hasTool(defs []tools.Definition, name string) bool {
	for _, d := range defs {
		if d.Name == name {
			return true
		}
	}
	return false
}
