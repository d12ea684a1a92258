package kit

import qrcode "github.com/skip2/go-qrcode"

// RenderQR draws text as a QR code in terminal characters, for logins by
// scanning (WhatsApp, WeChat); it returns text itself when it cannot.
func RenderQR(text string) string {
	q, err := qrcode.New(text, qrcode.Medium)
	if err != nil {
		return text
	}
	return q.ToSmallString(false)
}
