package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/channels"
)

func newChannelsCmd(a *app) *cobra.Command {
	login := commandArg("login CHANNEL", "Log a channel in interactively (e.g. pair WhatsApp by QR code)",
		func(cmd *cobra.Command, name string) error {
			if err := a.loaded.Paths.Ensure(); err != nil {
				return err
			}
			ch, err := newChannelRegistry().BuildOne(name, a.loaded.Config.Channels, channels.Deps{Log: a.log, Paths: a.loaded.Paths, Redact: a.redact})
			if err != nil {
				return err
			}
			lr, ok := ch.(channels.LoginRunner)
			if !ok {
				return fmt.Errorf("channels.%s needs no interactive login: put its credentials in the config", name)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			return lr.Login(ctx, printPrompt{cmd.OutOrStdout()})
		})
	return group("channels", "Chat channel tools (interactive logins)", login)
}

// printPrompt shows login steps on the terminal.
type printPrompt struct{ w io.Writer }

func (p printPrompt) Show(text string) { fmt.Fprintln(p.w, text) }
