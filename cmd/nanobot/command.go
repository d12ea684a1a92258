package main

import "github.com/spf13/cobra"

// command builds a subcommand that takes no arguments; run gets the cobra
// command for its context and output.
func command(use, short string, run func(cmd *cobra.Command) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return run(cmd) },
	}
}

// commandArg builds a subcommand that takes exactly one argument (named
// in use, "login CHANNEL").
func commandArg(use, short string, run func(cmd *cobra.Command, arg string) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return run(cmd, args[0]) },
	}
}

// group builds a command that only holds subcommands.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short}
	cmd.AddCommand(subs...)
	return cmd
}
