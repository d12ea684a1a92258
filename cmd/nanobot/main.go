// Command nanobot is the personal AI assistant gateway: `nanobot gateway`
// runs the daemon, `nanobot agent` talks to the agent in a terminal, and
// `nanobot onboard` writes a starter config and workspace.
package main

import (
	"fmt"
	"os"

	"github.com/nanobot-go/nanobot/tools/sandbox"
)

func main() {
	// Started as the sandbox helper (the gateway re-executes itself to
	// confine a child), this confines itself and becomes the command.
	sandbox.Init()
	// The same, by hand: `nanobot sandbox-exec POLICY -- PROGRAM ARGS...`
	// (hidden; for debugging a policy).
	if len(os.Args) > 1 && os.Args[1] == "sandbox-exec" {
		os.Exit(sandbox.HelperMain(os.Args[2:]))
	}
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "nanobot:", err)
		os.Exit(1)
	}
}
