package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
)

// HelperName is the argv[0] under which the gateway's executable runs as
// the sandbox helper: it applies the confinement to itself, then executes
// the real command in its place.
const HelperName = "nanobot-sandbox-exec"

// helperReady is set by Init: only a process whose main calls Init can be
// re-executed as the helper.
var helperReady atomic.Bool

// init serves the helper role as soon as this package is initialized:
// before main, and before the packages that come later in the program's
// initialization order (in the nanobot executable these take tens of
// milliseconds, which every confined command would otherwise pay, twice
// with namespaces). Only a process started under the name HelperName can
// get here; Init still decides whether the gateway uses its executable as
// the helper.
func init() {
	if filepath.Base(os.Args[0]) == HelperName {
		os.Exit(HelperMain(os.Args[1:]))
	}
}

// Init must be called first thing in main (and in TestMain of test
// binaries that start confined children). When the process was started as
// the sandbox helper it confines itself and executes the command, never
// returning; otherwise it records that the executable can serve as the
// helper and returns.
func Init() {
	if filepath.Base(os.Args[0]) == HelperName {
		os.Exit(HelperMain(os.Args[1:]))
	}
	helperReady.Store(true)
}

// HelperMain is the helper's body: args are the policy (JSON), "--", the
// program and its arguments. It returns only on failure (exit status 126,
// the shell's "cannot execute"), after printing why on stderr.
func HelperMain(args []string) int {
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintln(os.Stderr, "nanobot sandbox: usage: sandbox-exec POLICY -- PROGRAM [ARGS...]")
		return 126
	}
	p, err := decodePolicy(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "nanobot sandbox:", err)
		return 126
	}
	if err := confineAndExec(p, args[2], args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "nanobot sandbox:", err)
	}
	return 126
}
