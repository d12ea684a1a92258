package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newGatewayCmd(_ *app) *cobra.Command {
	return &cobra.Command{
		Use:   "gateway",
		Short: "Run the gateway daemon (chat channels, cron, heartbeat, web chat)",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("gateway: not yet available")
		},
	}
}
