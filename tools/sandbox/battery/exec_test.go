package battery

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/sandbox"
	"github.com/nanobot-go/nanobot/tools/sandbox/sandboxtest"
	"github.com/nanobot-go/nanobot/tools/shell"
)

// execRun is the real exec tool with the default sandbox settings of
// mode. Its friendly guards are out of the way (restrictToWorkspace off,
// every deny rule overridden) so that the sandbox alone is tested.
func execRun(t *testing.T, f *fixture, mode sandbox.Mode, noNetwork bool) runFunc {
	t.Helper()
	tool, err := shell.New(shell.Options{
		Workspace: f.ws, AllowPatterns: []string{`.*`}, Sandbox: mode, NoNetwork: noNetwork,
		MaxTimeout: 60 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	must(t, reg.Register(tool))
	return func(t *testing.T, command string, timeout int) string {
		t.Helper()
		res, err := reg.Execute(context.Background(), "exec", map[string]any{"command": command, "timeout": timeout})
		if err != nil {
			return res.Content + "\nerror: " + err.Error()
		}
		return res.Content
	}
}

func TestExecEscapes(t *testing.T) {
	forModes(t, func(t *testing.T, mode sandbox.Mode) {
		f := newFixture(t)
		runEscapes(t, f, mode, execRun(t, f, mode, false))
		t.Run("network off", func(t *testing.T) {
			networkEscape(t, mode, execRun(t, f, mode, true))
		})
	})
}

// TestExecTimeoutKillsEverything: a command that ignores SIGTERM, with
// children that ignore it too, one of them in a session of its own, is
// killed with all of them when its timeout passes.
func TestExecTimeoutKillsEverything(t *testing.T) {
	forModes(t, func(t *testing.T, mode sandbox.Mode) {
		f := newFixture(t)
		run := execRun(t, f, mode, false)
		m1, m2, m3 := marker(), marker(), marker()
		script := "trap '' TERM; sleep " + m2 + " & sleep " + m3
		// A new session leaves the process group; only a PID namespace
		// (bwrap, or landlock with user namespaces) still catches it.
		escapesGroup := mode == sandbox.ModeNone || (mode == sandbox.ModeLandlock && !sandbox.Detect().UserNS)
		if !escapesGroup {
			script = "trap '' TERM; setsid sleep " + m1 + " & " + script
		}
		began := time.Now()
		out := run(t, script, 1)
		if !strings.Contains(out, "timed out after 1s") {
			t.Fatalf("want a timeout, got:\n%s", out)
		}
		if d := time.Since(began); d > 10*time.Second {
			t.Errorf("timing out took %s", d)
		}
		for _, m := range []string{m1, m2, m3} {
			sandboxtest.WaitNoProcs(t, m, 10*time.Second)
		}
	})
}

// TestExecForkBomb: a fork bomb inside exec stays under the process limit,
// the gateway (this test process) keeps answering, and the timeout clears
// it away.
func TestExecForkBomb(t *testing.T) {
	for _, mode := range sandboxtest.ConfiningModes {
		t.Run(string(mode), func(t *testing.T) {
			sandboxtest.Require(t, mode)
			requireForkBombContainable(t)
			f := newFixture(t)
			forkBomb(t, execRun(t, f, mode, false), sandbox.DefaultProcesses)
		})
	}
}
