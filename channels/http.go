package channels

import (
	"net/http"

	"github.com/nanobot-go/nanobot/internal/reqbody"
)

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

// AllowPost answers 405 (with an Allow header) to a webhook request that is
// not a POST and reports whether the handler may go on.
func AllowPost(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodPost {
		return true
	}
	w.Header().Set("Allow", http.MethodPost)
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

// ReadBody reads a webhook request's body of at most limit bytes. On
// failure it has answered and ok is false: 413 for a body over limit, 408
// for one that did not arrive within the gateway's body deadline (a
// platform retries both; a slowloris client only loses its connection),
// 400 for one that broke off.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) (body []byte, ok bool) {
	body, err := reqbody.Read(w, r, limit)
	if err != nil {
		status := reqbody.Status(err)
		msg := "could not read the body"
		switch status {
		case http.StatusRequestEntityTooLarge:
			msg = "body too large"
		case http.StatusRequestTimeout:
			msg = "body did not arrive in time"
		}
		http.Error(w, msg, status)
		return nil, false
	}
	return body, true
}
