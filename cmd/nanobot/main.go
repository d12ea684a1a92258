// Command nanobot is the personal AI assistant gateway: `nanobot gateway`
// runs the daemon, `nanobot agent` talks to the agent in a terminal, and
// `nanobot onboard` writes a starter config and workspace.
//
// Concurrency: the commands run on the main goroutine; `gateway` ends on
// SIGINT or SIGTERM and turns SIGHUP into a reload from a goroutine of its
// own, `agent` ends on SIGTERM (Ctrl-C belongs to the REPL) and `channels
// login` on SIGINT. The Langfuse exporter runs on a goroutine of its own
// until the command's wiring is closed.
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
