package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/feishu"
	"github.com/nanobot-go/nanobot/configs"
)

func newChannelsCmd(a *app) *cobra.Command {
	login := commandArg("login CHANNEL", "Log a channel in interactively (pair WhatsApp by QR code; create a Feishu or Lark bot by QR code)",
		func(cmd *cobra.Command, name string) error {
			if err := a.loaded.Paths.Ensure(); err != nil {
				return err
			}
			if name == "feishu" || name == "lark" {
				ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
				defer stop()
				return feishuLogin(ctx, a, name, feishu.Registrar{URLs: feishuAccounts}, cmd.OutOrStdout())
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
	status := command("status", "Show each channel's configuration and, when the gateway runs, its health (exit status 1 when the gateway is down or a channel stopped for good)", func(cmd *cobra.Command) error {
		return channelsStatus(cmd.OutOrStdout(), &a.loaded.Config)
	})
	return group("channels", "Chat channel tools (status, interactive logins)", status, login)
}

// feishuAccounts overrides the Feishu and Lark registration services
// (tests); nil: the real ones.
var feishuAccounts map[string]string

// feishuLogin creates a Feishu (or Lark) bot by QR code and saves its app
// id and secret as channels.feishu, enabled: the Python nanobot's
// `channels login feishu`. The file is checked before the scan, so a
// config the login cannot edit costs no bot; one saved meanwhile (by the
// gateway or the workbench) is read again and the bot merged into it,
// never overwritten.
func feishuLogin(ctx context.Context, a *app, domain string, r feishu.Registrar, out io.Writer) error {
	l := a.loaded
	if _, _, err := readConfigTree(l.Path); err != nil {
		return err
	}
	r.Domain = domain
	reg, err := r.Register(ctx, func(s string) { fmt.Fprintln(out, s) })
	if err != nil {
		return err
	}
	for try := 0; ; try++ {
		// Only these values are written into the file as it is (the
		// starter file when there is none): the rest stays as written.
		raw, _, err := readConfigTree(l.Path)
		data := raw
		if raw == nil {
			data = configs.Example
		}
		for _, kv := range []struct {
			path  string
			value any
		}{
			{"channels.feishu.enabled", true}, {"channels.feishu.appId", reg.AppID},
			{"channels.feishu.appSecret", reg.AppSecret}, {"channels.feishu.domain", reg.Domain},
		} {
			if err != nil {
				break
			}
			data, err = configs.PatchJSON(data, kv.path, kv.value)
		}
		if err == nil {
			err = saveConfigData(l.Path, raw != nil, raw, data)
		}
		if errors.Is(err, errChangedMeanwhile) && try < 3 {
			continue
		}
		if err != nil {
			return fmt.Errorf("the %s bot %s was created but not saved (its secret can be reset in the developer console): %w", reg.Domain, reg.AppID, err)
		}
		break
	}
	fmt.Fprintf(out, "The %s bot %s was created and saved in %s (mode 0600). Restart the gateway to connect it; who may talk to it is channels.feishu.allowFrom.\n", reg.Domain, reg.AppID, l.Path)
	return nil
}

// readConfigTree reads the config file as a JSON tree, or the embedded
// example when there is none yet (raw nil).
func readConfigTree(path string) (raw []byte, tree map[string]any, err error) {
	src := configs.Example
	switch raw, err = os.ReadFile(path); {
	case err == nil:
		src = raw
	case !errors.Is(err, fs.ErrNotExist):
		return nil, nil, err
	}
	tree = map[string]any{}
	if err := json.Unmarshal(src, &tree); err != nil {
		return nil, nil, fmt.Errorf("%s is not plain JSON, so the login will not edit it: %w", path, err)
	}
	return raw, tree, nil
}

// printPrompt shows login steps on the terminal.
type printPrompt struct{ w io.Writer }

func (p printPrompt) Show(text string) { fmt.Fprintln(p.w, text) }

// channelsStatus prints the channels as configured and as the running
// gateway reports them; the error makes the exit status say what a script
// needs to know.
func channelsStatus(w io.Writer, c *configs.Config) error {
	printChannels(w, c)
	st, err := fetchStatus(c.Gateway.Host, c.Gateway.Port)
	if err != nil {
		fmt.Fprintf(w, "gateway:    http://%s:%d (not running)\n", c.Gateway.Host, c.Gateway.Port)
		return errors.New("the gateway is not running")
	}
	fmt.Fprintf(w, "health (gateway %s, ready: %v):\n", st.Version, st.Ready)
	if n := printChannelHealth(w, st); n > 0 {
		return fmt.Errorf("%d channel(s) stopped for good", n)
	}
	return nil
}
