package shell

import (
	"fmt"
	"os"
	"testing"

	"github.com/nanobot-go/nanobot/tools/sandbox"
	"github.com/nanobot-go/nanobot/tools/sandbox/sandboxtest"
	"go.uber.org/goleak"
)

// The test binary is the sandbox helper of the commands it runs, as the
// nanobot executable is the gateway's: the tests run under the default
// sandbox (Landlock where the kernel has it).
func TestMain(m *testing.M) {
	sandboxtest.ServeIfAsked()
	sandbox.Init()
	code := m.Run()
	// A command's watcher that outlives the tests did not stop with it.
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		code = 1
	}
	os.Exit(code)
}
