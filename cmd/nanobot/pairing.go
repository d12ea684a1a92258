package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/nanobot-go/nanobot/gateway/relay"
	"github.com/spf13/cobra"
)

func newPairingCmd(a *app) *cobra.Command {
	store := func() *relay.PairingStore {
		return relay.NewPairingStore(filepath.Join(a.loaded.Paths.State, "pairing.json"))
	}
	list := command("list", "List pending pairing codes", func(cmd *cobra.Command) error {
		pending := store().Pending()
		if len(pending) == 0 {
			fmt.Fprintln(cmd.OutOrStdout(), "no pending pairing requests")
		}
		for _, p := range pending {
			fmt.Fprintf(cmd.OutOrStdout(), "%s  %-10s sender %s  (expires in %s)\n", p.Code, p.Channel, p.SenderID, time.Until(p.Expires).Round(time.Minute))
		}
		return nil
	})
	approve := commandArg("approve CODE", "Approve the sender behind a pairing code", func(cmd *cobra.Command, code string) error {
		p, err := store().Approve(code)
		if err != nil {
			return fmt.Errorf("pairing approve %s: %w", code, err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "approved %s on %s\n", p.SenderID, p.Channel)
		return nil
	})
	return group("pairing", "Approve people who asked to talk to the bot", list, approve)
}
