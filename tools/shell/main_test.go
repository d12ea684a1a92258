package shell

import (
	"os"
	"testing"

	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// The test binary is the sandbox helper of the commands it runs, as the
// nanobot executable is the gateway's: the tests run under the default
// sandbox (Landlock where the kernel has it).
func TestMain(m *testing.M) {
	sandbox.Init()
	os.Exit(m.Run())
}
