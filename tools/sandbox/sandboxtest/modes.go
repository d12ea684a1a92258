//go:build unix

package sandboxtest

import (
	"os"
	"testing"

	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// ConfiningModes are the modes a security test runs under, each where the
// host provides it (see Require).
var ConfiningModes = []sandbox.Mode{sandbox.ModeLandlock, sandbox.ModeBwrap}

// Require skips the test, saying why, when the host cannot provide mode.
// A missing Landlock fails the test in CI (CI set), where the kernel is
// known to have it; bubblewrap may be unable to build namespaces in a CI
// container, so it only ever skips.
func Require(t testing.TB, mode sandbox.Mode) {
	t.Helper()
	_, err := sandbox.ResolveMode(mode)
	if err == nil {
		return
	}
	if mode == sandbox.ModeLandlock && os.Getenv("CI") != "" {
		t.Fatalf("sandbox mode %s unavailable: %v", mode, err)
	}
	t.Skipf("sandbox mode %s unavailable on this machine: %v", mode, err)
}
