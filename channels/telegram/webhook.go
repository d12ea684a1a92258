package telegram

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/channels"
)

// WebhookPath is the path of webhookUrl, where the gateway mounts
// WebhookHandler ("" in polling mode).
func (c *Channel) WebhookPath() string {
	if c.cfg.WebhookURL == "" {
		return ""
	}
	u, err := url.Parse(c.cfg.WebhookURL)
	if err != nil || u.Path == "" {
		return "/"
	}
	return u.Path
}

// maxUpdateBytes bounds one webhook request body.
const maxUpdateBytes = 4 << 20

// WebhookHandler receives updates in webhook mode. It checks Telegram's
// secret token header (constant time), delivers the update before
// answering (a 2xx is Telegram's acknowledgement), answers 503 when the
// gateway did not take it (Telegram sends it again later), and answers
// 200 to updates it cannot decode so they are not sent again and again.
// It answers 503 while the channel is not running.
func (c *Channel) WebhookHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !channels.AllowPost(w, r) {
			return
		}
		got := r.Header.Get("X-Telegram-Bot-Api-Secret-Token")
		if c.cfg.WebhookSecret == "" || subtle.ConstantTimeCompare([]byte(got), []byte(c.cfg.WebhookSecret)) != 1 {
			c.log.Warn("telegram: webhook request with a wrong secret token rejected", "remote", r.RemoteAddr)
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		c.mu.Lock()
		running := c.inbox != nil && c.me != nil
		c.mu.Unlock()
		if !running {
			http.Error(w, "not running", http.StatusServiceUnavailable)
			return
		}
		body, ok := channels.ReadBody(w, r, maxUpdateBytes)
		if !ok {
			return
		}
		var u models.Update
		if err := json.Unmarshal(body, &u); err != nil {
			c.log.Warn("telegram: malformed webhook update skipped", "err", err)
			w.WriteHeader(http.StatusOK)
			return
		}
		// One attempt: a refusal is answered at once, and Telegram, which
		// keeps an unacknowledged update and sends it again with its own
		// backoff, does the retrying (holding the request would hold one
		// of its connections to the bot as well).
		if err := c.handleUpdate(r.Context(), &u, false); err != nil {
			if r.Context().Err() == nil {
				c.log.Warn("telegram: the gateway did not take an update; answering 503 so that Telegram sends it again", "update_id", u.ID, "err", err)
			}
			http.Error(w, "not taken; retry", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}
