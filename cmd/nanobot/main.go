// Command nanobot is the personal AI assistant gateway: `nanobot gateway`
// runs the daemon, `nanobot agent` talks to the agent in a terminal, and
// `nanobot onboard` writes a starter config and workspace.
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		var code exitError
		if errors.As(err, &code) {
			os.Exit(int(code))
		}
		fmt.Fprintln(os.Stderr, "nanobot:", err)
		os.Exit(1)
	}
}
