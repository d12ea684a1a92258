package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/types/events"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
)

// ErrLoginTimeout is returned when the phone did not scan any of the QR
// codes in time.
var ErrLoginTimeout = errors.New("whatsapp: no QR code was scanned in time; run the login again")

// Login implements channels.LoginRunner (`nanobot channels login
// whatsapp`): it pairs this gateway as a linked device of your WhatsApp
// account, by QR code (shown in the terminal, renewed until scanned) or,
// with pairPhone set, by an 8-character code to type on the phone. The
// device keys are stored in the state folder; the gateway then connects
// with them.
func (c *Channel) Login(ctx context.Context, prompt channels.LoginPrompt) error {
	if c.legacyOnly() {
		prompt.Show("The device store format changed: the old " + c.legacyPath + " (SQLite) cannot be read any more and is left untouched. " +
			"Linking again now; afterwards remove the old linked device on the phone and delete that file.")
	}
	cli, closeFn, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer closeFn()
	if cli.IsLoggedIn() {
		prompt.Show("WhatsApp is already paired. To pair another account, unlink this device on the phone and delete " + c.storePath + ".")
		return nil
	}
	if c.cfg.PairPhone != "" {
		return c.loginWithCode(ctx, cli, prompt)
	}
	qr, err := cli.GetQRChannel(ctx)
	if err != nil {
		return fmt.Errorf("whatsapp: login: %w", err)
	}
	if err := cli.Connect(); err != nil {
		return fmt.Errorf("whatsapp: login: connect: %w", err)
	}
	shown := 0
	for item := range qr {
		switch item.Event {
		case whatsmeow.QRChannelEventCode:
			shown++
			prompt.Show(fmt.Sprintf("Scan with WhatsApp on your phone (Settings → Linked devices → Link a device), code %d, valid %s:\n%s", shown, item.Timeout, kit.RenderQR(item.Code)))
		case whatsmeow.QRChannelSuccess.Event:
			prompt.Show("Paired. Start the gateway with channels.whatsapp.enabled: true.")
			return nil
		case whatsmeow.QRChannelTimeout.Event:
			return ErrLoginTimeout
		case whatsmeow.QRChannelEventError:
			return fmt.Errorf("whatsapp: pairing failed: %w", item.Error)
		default:
			return fmt.Errorf("whatsapp: pairing failed: %s", item.Event)
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return ErrLoginTimeout
}

// loginWithCode pairs by phone number: WhatsApp shows a notification, the
// user types the code.
func (c *Channel) loginWithCode(ctx context.Context, cli client, prompt channels.LoginPrompt) error {
	paired := make(chan error, 1)
	cli.AddEventHandler(func(evt any) {
		switch e := evt.(type) {
		case *events.PairSuccess:
			select {
			case paired <- nil:
			default:
			}
		case *events.PairError:
			select {
			case paired <- fmt.Errorf("whatsapp: pairing failed: %w", e.Error):
			default:
			}
		}
	})
	if err := cli.Connect(); err != nil {
		return fmt.Errorf("whatsapp: login: connect: %w", err)
	}
	code, err := cli.PairPhone(ctx, strings.TrimPrefix(c.cfg.PairPhone, "+"), true, whatsmeow.PairClientChrome, "Chrome (Linux)")
	if err != nil {
		return fmt.Errorf("whatsapp: pairing code: %w", err)
	}
	prompt.Show("On your phone: WhatsApp → Settings → Linked devices → Link a device → Link with phone number instead, and enter " + code)
	select {
	case err := <-paired:
		if err == nil {
			prompt.Show("Paired. Start the gateway with channels.whatsapp.enabled: true.")
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
