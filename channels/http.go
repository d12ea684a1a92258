package channels

import "net/http"

// WebhookHandler is a channel that receives over the gateway's HTTP server
// (Telegram in webhook mode, the web chat). The gateway mounts
// WebhookHandler at WebhookPath, a net/http ServeMux pattern ("/telegram",
// or "/" for the root and everything below it that no other route takes);
// "" mounts nothing. The handler is called concurrently, also while Run is
// not running: it should then answer 503 so the platform retries.
type WebhookHandler interface {
	WebhookPath() string
	WebhookHandler() http.Handler
}

// Noticer is a channel with something to tell the operator on the terminal
// once the gateway serves (the web chat's address and access token). base is
// the gateway's URL ("http://127.0.0.1:18790"). The line goes to the
// terminal, not to the log, which is kept and shipped.
type Noticer interface {
	Notice(base string) string
}
