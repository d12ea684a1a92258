package mcp_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/nanobot-go/nanobot/tools/mcp"
	"github.com/nanobot-go/nanobot/tools/sandbox"
	"go.uber.org/goleak"
)

// The test binary is the sandbox helper of the servers it starts, as the
// nanobot executable is the gateway's: stdio servers run under the default
// sandbox (Landlock where the kernel has it).
func TestMain(m *testing.M) {
	sandbox.Init()
	code := m.Run()
	mcp.RemoveRunServer()
	// A server connection or process watcher that outlives the tests did
	// not stop with its context.
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		code = 1
	}
	os.Exit(code)
}
