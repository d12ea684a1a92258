package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// exitError ends the process with its code and no message (the command
// already printed one).
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// newSandboxExecCmd is the hidden helper the sandbox re-executes to confine
// a child; it can also be run by hand to try the policy:
//
//	nanobot sandbox-exec --rw=$PWD -- sh -c 'cat ~/.nanobot/config.json'
func newSandboxExecCmd() *cobra.Command {
	return &cobra.Command{
		Use:                sandbox.HelperCommand + " [flags] -- program [args...]",
		Short:              "Run a program confined by the sandbox (internal helper)",
		Hidden:             true,
		DisableFlagParsing: true,
		// No config and no logger: the helper must not depend on them.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(_ *cobra.Command, args []string) error {
			if code := sandbox.ExecMain(args); code != 0 {
				return exitError(code)
			}
			return nil
		},
	}
}
