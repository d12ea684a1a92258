package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newAgentCmd(_ *app) *cobra.Command {
	return &cobra.Command{
		Use:   "agent",
		Short: "Talk to the agent in the terminal",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("agent: not yet available")
		},
	}
}
