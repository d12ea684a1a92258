package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/channels"
)

func newPairingCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pairing",
		Short: "Approve people who asked to talk to the bot",
	}
	store := func() *channels.PairingStore {
		return channels.NewPairingStore(filepath.Join(a.loaded.Paths.State, "pairing.json"))
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List pending pairing codes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pending := store().Pending()
			if len(pending) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no pending pairing requests")
			}
			for _, p := range pending {
				fmt.Fprintf(cmd.OutOrStdout(), "%s  %-10s sender %s  (expires in %s)\n", p.Code, p.Channel, p.SenderID, time.Until(p.Expires).Round(time.Minute))
			}
			return nil
		},
	}, &cobra.Command{
		Use:   "approve CODE",
		Short: "Approve the sender behind a pairing code",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := store().Approve(args[0])
			if err != nil {
				return fmt.Errorf("pairing approve %s: %w", args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "approved %s on %s\n", p.SenderID, p.Channel)
			return nil
		},
	})
	return cmd
}
