package sandbox_test

import (
	"os"
	"testing"

	"github.com/nanobot-go/nanobot/tools/sandbox"
	"github.com/nanobot-go/nanobot/tools/sandbox/sandboxtest"
)

// The test binary serves as the sandbox helper of its own confined
// children, as the nanobot executable does for the gateway's.
func TestMain(m *testing.M) {
	sandboxtest.ServeIfAsked()
	if os.Getenv(tcpProbeEnv) != "" {
		tcpProbe(os.Args[1:])
		os.Exit(0)
	}
	if target := os.Getenv(unixProbeEnv); target != "" {
		unixProbe(target)
		os.Exit(0)
	}
	sandbox.Init()
	os.Exit(m.Run())
}
