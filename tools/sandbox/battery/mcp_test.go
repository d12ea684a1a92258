package battery

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/mcp"
	"github.com/nanobot-go/nanobot/tools/sandbox"
	"github.com/nanobot-go/nanobot/tools/sandbox/sandboxtest"
)

// mcpRun starts the run server as a stdio MCP server through the tools/mcp
// Manager, confined by mode as the gateway would, and runs commands with
// its "run" tool.
func mcpRun(t *testing.T, f *fixture, mode sandbox.Mode, noNetwork bool) (runFunc, *mcp.Manager) {
	t.Helper()
	reg := tools.NewRegistry()
	cfg := map[string]configs.MCPServerConfig{"battery": {Type: "stdio", Command: runServer, ToolTimeout: 60, EnabledTools: []string{"*"}}}
	m := mcp.New(cfg, reg, mcp.Options{Dir: f.ws, Writable: []string{f.ws}, Sandbox: mode, NoNetwork: noNetwork, BackoffMin: 50 * time.Millisecond, BackoffMax: 500 * time.Millisecond})
	m.Start(context.Background(), 30*time.Second)
	t.Cleanup(m.Close)
	if st := m.Status(); len(st) != 1 || st[0].State != mcp.StateConnected {
		t.Fatalf("MCP server not connected: %+v", st)
	}
	return func(t *testing.T, command string, timeout int) string {
		t.Helper()
		res, err := reg.Execute(context.Background(), "mcp_battery_run", map[string]any{"command": command, "timeout": timeout})
		if err != nil {
			return res.Content + "\nerror: " + err.Error()
		}
		return res.Content
	}, m
}

func TestMCPEscapes(t *testing.T) {
	forModes(t, func(t *testing.T, mode sandbox.Mode) {
		f := newFixture(t)
		run, _ := mcpRun(t, f, mode, false)
		runEscapes(t, f, mode, run)
		t.Run("network off", func(t *testing.T) {
			run, _ := mcpRun(t, f, mode, true)
			networkEscape(t, mode, run)
		})
	})
}

// TestMCPServerStopKillsEverything: what a server's command leaves behind,
// ignoring SIGTERM, in a process group (the server's choice) or a session
// of its own, dies with the server. Unconfined it survives: the control.
func TestMCPServerStopKillsEverything(t *testing.T) {
	forModes(t, func(t *testing.T, mode sandbox.Mode) {
		if mode == sandbox.ModeLandlock && !sandbox.Detect().UserNS {
			t.Skip("no user namespaces: without its own PID namespace a landlock child can leave the server's process group (documented limit)")
		}
		f := newFixture(t)
		run, m := mcpRun(t, f, mode, false)
		m1, m2 := marker(), marker()
		script := "trap '' TERM; setsid sleep " + m1 + " > /dev/null 2>&1 & sleep " + m2 + " > /dev/null 2>&1 & echo started"
		if out := run(t, script, 5); !strings.Contains(out, "started") {
			t.Fatalf("run: %s", out)
		}
		sandboxtest.WaitProcs(t, m1, 10*time.Second)
		sandboxtest.WaitProcs(t, m2, 10*time.Second)
		m.Close()
		if mode == sandbox.ModeNone {
			// Both are out of the server's process group, so killing
			// the group missed them.
			left := append(sandboxtest.FindProcs(m1), sandboxtest.FindProcs(m2)...)
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			if len(left) != 2 {
				t.Fatalf("control: %d of 2 leftovers survived an unconfined server's stop; the check proves nothing", len(left))
			}
			return
		}
		for _, mk := range []string{m1, m2} {
			sandboxtest.WaitNoProcs(t, mk, 15*time.Second)
		}
	})
}

// TestMCPForkBomb: a fork bomb run by an MCP server stays under the
// server's process limit and the gateway keeps answering.
func TestMCPForkBomb(t *testing.T) {
	for _, mode := range sandboxtest.ConfiningModes {
		t.Run(string(mode), func(t *testing.T) {
			sandboxtest.Require(t, mode)
			requireForkBombContainable(t)
			f := newFixture(t)
			run, _ := mcpRun(t, f, mode, false)
			forkBomb(t, run, sandbox.DefaultProcesses)
		})
	}
}
