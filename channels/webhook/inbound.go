package webhook

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/internal/replay"
	"github.com/nanobot-go/nanobot/internal/reqbody"
)

// Request is the JSON body a caller POSTs to /hooks/<name>.
type Request struct {
	// ChatID names the conversation (the session is "webhook:<hook>:<chatId>").
	ChatID string `json:"chatId"`
	// SenderID names who speaks (matched against the hook's allowFrom).
	SenderID string `json:"senderId"`
	// Text is the message.
	Text string `json:"text"`
	// ID, when set, identifies the message: a second request with the same
	// id within the replay window is refused (409).
	ID string `json:"id,omitempty"`
}

// Response is the JSON answer to a request: the id the message got, and for
// sync hooks the agent's answer.
type Response struct {
	ID      string `json:"id,omitempty"`
	Status  string `json:"status,omitempty"` // "accepted" (async) or "answered" (sync)
	Text    string `json:"text,omitempty"`
	IsError bool   `json:"isError,omitempty"`
	Error   string `json:"error,omitempty"`
}

// maxIDLen bounds chatId, senderId and id.
const maxIDLen = 256

// WebhookHandler implements channels.WebhookHandler: POST /hooks/<name>.
func (c *Channel) WebhookHandler() http.Handler {
	return http.HandlerFunc(c.serve)
}

func (c *Channel) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reply(w, http.StatusMethodNotAllowed, Response{Error: "method not allowed; POST a signed JSON body"})
		return
	}
	name := strings.TrimPrefix(r.URL.Path, c.WebhookPath())
	hook, ok := c.cfg.Hooks[name]
	if !ok || strings.Contains(name, "/") {
		reply(w, http.StatusNotFound, Response{Error: "unknown hook"})
		return
	}
	log := c.log.With("hook", name)
	body, sig, now, ok := c.signedBody(w, r, hook, log)
	if !ok {
		return
	}
	in := c.currentInbox()
	if in == nil {
		reply(w, http.StatusServiceUnavailable, Response{Error: "the gateway is not taking messages right now; retry"})
		return
	}
	// Each key is on disk before the request is taken, and forgotten again
	// when it is not taken, so that the caller may send it once more.
	until := now.Add(replayWindow)
	sigKey := name + "\x00sig\x00" + sig
	if !c.remember(w, log, r, sigKey, until, "replayed request (this signature was used already)", Response{}) {
		return
	}
	req, ok := decodeRequest(w, body, hook, log)
	if !ok {
		return // the same bytes would be refused the same way
	}
	taken := []string{sigKey}
	if req.ID != "" {
		idKey := name + "\x00id\x00" + req.ID
		if !c.remember(w, log, r, idKey, until, "a message with this id was received already", Response{ID: req.ID}) {
			c.forget(log, sigKey)
			return
		}
		taken = append(taken, idKey)
	} else {
		req.ID = newID()
	}
	m := bus.Inbound{
		Channel:    Name,
		SenderID:   name + ":" + req.SenderID,
		ChatID:     name + ":" + req.ChatID,
		MessageID:  name + ":" + req.ID,
		Content:    req.Text,
		Metadata:   bus.Metadata{"hook": name},
		ReceivedAt: time.Now(),
	}
	var wt *waiter
	if hook.Sync {
		wt = c.register(m.MessageID)
		defer c.unregister(m.MessageID, wt)
	}
	if err := in.Deliver(r.Context(), m); err != nil {
		if errors.Is(err, channels.ErrDenied) {
			reply(w, http.StatusForbidden, Response{ID: req.ID, Error: "sender not allowed"})
			return
		}
		c.forget(log, taken...) // not taken: the caller may send it again
		log.Warn("webhook: message not taken", "err", err)
		reply(w, http.StatusServiceUnavailable, Response{ID: req.ID, Error: "the gateway could not take the message; retry"})
		return
	}
	if wt == nil {
		reply(w, http.StatusAccepted, Response{ID: req.ID, Status: "accepted"})
		return
	}
	t := time.NewTimer(time.Duration(hook.SyncTimeoutS) * time.Second)
	defer t.Stop()
	select {
	case res := <-wt.done:
		reply(w, http.StatusOK, Response{ID: req.ID, Status: "answered", Text: res.text, IsError: res.isError})
	case <-t.C:
		log.Warn("webhook: no answer within syncTimeoutS", "id", req.ID, "timeout_s", hook.SyncTimeoutS)
		reply(w, http.StatusGatewayTimeout, Response{ID: req.ID, Error: "no answer within syncTimeoutS; it goes to replyUrl if the hook has one"})
	case <-r.Context().Done():
	}
}

// remember records key in the replay memory until until and reports
// whether it was new and is stored. Otherwise it has answered the caller:
// 409 (seen already, with replayed as the error), 429 (the memory is full)
// or 503 (it cannot be stored).
func (c *Channel) remember(w http.ResponseWriter, log *slog.Logger, r *http.Request, key string, until time.Time, replayed string, res Response) (ok bool) {
	fresh, err := c.replay.Add(key, until)
	switch {
	case errors.Is(err, replay.ErrFull):
		log.Warn("webhook: replay memory full; request refused")
		w.Header().Set("Retry-After", "60")
		res.Error = "too many requests; retry later"
		reply(w, http.StatusTooManyRequests, res)
	case err != nil:
		log.Error("webhook: cannot record the request in the replay memory; refused", "err", err)
		res.Error = "the gateway could not take the message; retry"
		reply(w, http.StatusServiceUnavailable, res)
	case !fresh:
		log.Warn("webhook: replayed request rejected", "remote", r.RemoteAddr)
		res.Error = replayed
		reply(w, http.StatusConflict, res)
	}
	return err == nil && fresh
}

// forget drops the keys of a request that was not taken. When that cannot
// be recorded, the request stays refused as a replay after a restart.
func (c *Channel) forget(log *slog.Logger, keys ...string) {
	for _, k := range keys {
		if err := c.replay.Forget(k); err != nil {
			log.Warn("webhook: cannot record a refused request as not taken; after a restart it counts as a replay", "err", err)
		}
	}
}

// signedBody reads the body of r, bounded by maxBodyBytes, and checks its
// signature and timestamp with the hook's secret; now is when the body was
// in. On failure it has answered the caller and ok is false.
func (c *Channel) signedBody(w http.ResponseWriter, r *http.Request, hook Hook, log *slog.Logger) (body []byte, sig string, now time.Time, ok bool) {
	body, err := reqbody.Read(w, r, c.cfg.MaxBodyBytes)
	if err != nil {
		switch status := reqbody.Status(err); status {
		case http.StatusRequestEntityTooLarge:
			reply(w, status, Response{Error: "body larger than maxBodyBytes"})
		case http.StatusRequestTimeout:
			reply(w, status, Response{Error: "body did not arrive in time"})
		default:
			reply(w, status, Response{Error: "reading the body failed"})
		}
		return nil, "", now, false
	}
	now = c.now()
	sig, err = Verify(hook.Secret, r.Header.Get(HeaderTimestamp), r.Header.Get(HeaderSignature), body, now)
	if err != nil {
		log.Warn("webhook: request rejected", "reason", err.Error(), "remote", r.RemoteAddr)
		reply(w, http.StatusUnauthorized, Response{Error: err.Error()})
		return nil, "", now, false
	}
	return body, sig, now, true
}

// decodeRequest parses a verified body and checks its fields and its
// sender against the hook's allowFrom. On failure it has answered the
// caller and ok is false.
func decodeRequest(w http.ResponseWriter, body []byte, hook Hook, log *slog.Logger) (req Request, ok bool) {
	if err := json.Unmarshal(body, &req); err != nil {
		log.Warn("webhook: malformed body skipped", "err", err, "bytes", len(body))
		reply(w, http.StatusBadRequest, Response{Error: "body is not JSON {chatId, senderId, text, id?}: " + err.Error()})
		return req, false
	}
	if msg := checkRequest(req); msg != "" {
		reply(w, http.StatusBadRequest, Response{Error: msg})
		return req, false
	}
	if len(hook.AllowFrom) > 0 && !slices.Contains(hook.AllowFrom, "*") && !slices.Contains(hook.AllowFrom, req.SenderID) {
		log.Info("webhook: sender not on the hook's allowFrom", "sender", req.SenderID)
		reply(w, http.StatusForbidden, Response{Error: "sender not allowed on this hook"})
		return req, false
	}
	return req, true
}

// checkRequest returns what is wrong with a request's fields, or "".
func checkRequest(q Request) string {
	switch {
	case strings.TrimSpace(q.ChatID) == "":
		return "chatId: required"
	case strings.TrimSpace(q.SenderID) == "":
		return "senderId: required"
	case strings.TrimSpace(q.Text) == "":
		return "text: required"
	case len(q.ChatID) > maxIDLen || len(q.SenderID) > maxIDLen || len(q.ID) > maxIDLen:
		return "chatId, senderId and id: at most 256 bytes each"
	case !utf8.ValidString(q.Text):
		return "text: not valid UTF-8"
	}
	return ""
}

func reply(w http.ResponseWriter, status int, r Response) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(r)
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
