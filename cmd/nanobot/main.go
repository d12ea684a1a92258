// Command nanobot is the personal AI assistant gateway: `nanobot gateway`
// runs the daemon, `nanobot agent` talks to the agent in a terminal, and
// `nanobot onboard` writes a starter config and workspace.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "nanobot:", err)
		os.Exit(1)
	}
}
