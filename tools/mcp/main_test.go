package mcp_test

import (
	"os"
	"testing"

	"github.com/nanobot-go/nanobot/tools/mcp"
	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// The test binary is the sandbox helper of the servers it starts, as the
// nanobot executable is the gateway's: stdio servers run under the default
// sandbox (Landlock where the kernel has it).
func TestMain(m *testing.M) {
	sandbox.Init()
	code := m.Run()
	mcp.RemoveRunServer()
	os.Exit(code)
}
