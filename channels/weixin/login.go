package weixin

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
)

// Login implements channels.LoginRunner: it shows a QR code to scan with
// WeChat and, once the user confirmed on the phone, saves the bot token
// (and the API host the login names) in the state folder.
func (c *Channel) Login(ctx context.Context, prompt channels.LoginPrompt) error {
	for attempt := 1; attempt <= 3; attempt++ {
		var qr struct {
			QRCode string `json:"qrcode"`
			Image  string `json:"qrcode_img_content"`
		}
		if err := c.call(ctx, "ilink/bot/get_bot_qrcode?bot_type=3", nil, &qr, false); err != nil {
			return err
		}
		if qr.QRCode == "" {
			return errors.New("weixin: login: no QR code in the answer")
		}
		show := qr.Image
		if show == "" {
			show = qr.QRCode
		}
		prompt.Show("Scan with WeChat (the ClawBot plugin must be enabled: Me > Settings > Plugins):\n" + kit.RenderQR(show))
		done, err := c.waitForScan(ctx, prompt, qr.QRCode)
		if err != nil {
			return err
		}
		if done {
			prompt.Show("Logged in. Start the gateway with channels.weixin.enabled: true.")
			return nil
		}
		prompt.Show("The QR code expired; here is a new one.")
	}
	return errors.New("weixin: login: the QR code expired three times; run the command again")
}

// waitForScan polls the QR code's status; true once confirmed, false when
// it expired.
func (c *Channel) waitForScan(ctx context.Context, prompt channels.LoginPrompt, code string) (bool, error) {
	scanned := false
	for {
		var st struct {
			Status  string `json:"status"`
			Token   string `json:"bot_token"`
			BotID   string `json:"ilink_bot_id"`
			BaseURL string `json:"baseurl"`
		}
		if err := c.call(ctx, "ilink/bot/get_qrcode_status?qrcode="+url.QueryEscape(code), nil, &st, false); err != nil {
			return false, err
		}
		switch st.Status {
		case "confirmed":
			if st.Token == "" {
				return false, errors.New("weixin: login confirmed without a bot token")
			}
			c.redact.Add(st.Token)
			if err := c.state.login(st.Token, st.BaseURL, st.BotID); err != nil {
				return false, fmt.Errorf("weixin: saving the login: %w", err)
			}
			return true, nil
		case "expired":
			return false, nil
		case "scaned":
			if !scanned {
				scanned = true
				prompt.Show("Scanned; confirm the login on the phone.")
			}
		}
		t := time.NewTimer(c.qrPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		case <-t.C:
		}
	}
}
