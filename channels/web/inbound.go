package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

func (c *Channel) serveWS(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	loggedIn := c.loggedIn
	c.mu.Unlock()
	signedIn := loggedIn != nil && loggedIn(r)
	// Accept verifies that Origin matches the Host (no cross-site sockets).
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		c.log.Warn("websocket rejected", "err", err, "remote", r.RemoteAddr)
		return
	}
	ws.SetReadLimit(int64(c.cfg.MaxMessageChars)*4 + 1024)
	ctx := r.Context()
	defer ws.CloseNow()

	// First frame: {"type":"auth","chat":"<browser id>","token":"..."}.
	var hello Frame
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = wsjson.Read(actx, ws, &hello)
	cancel()
	if err != nil || hello.Type != "auth" {
		ws.Close(websocket.StatusPolicyViolation, "expected auth frame")
		return
	}
	tokenOK := hello.Token != "" && c.owner.Check(hello.Token)
	if !tokenOK && !signedIn {
		_ = wsjson.Write(ctx, ws, Frame{Type: "error", Text: "wrong or missing access token: sign in to the workbench, or paste the token from the state folder's web_token"})
		ws.Close(websocket.StatusPolicyViolation, "unauthorized")
		c.log.Warn("web chat: wrong or missing token", "remote", r.RemoteAddr, "host", truncate(r.Host, 100))
		return
	}
	// Both ways in (the token, a workbench login) are the owner's: such a
	// connection may approve pairing codes.
	admin := true
	chat := sanitizeChat(hello.Chat)
	cn := &conn{ws: ws, chat: chat}
	c.mu.Lock()
	if len(c.conns[chat]) > 0 && (c.temps[chat] != nil) != hello.Temporary {
		// One chat id is either stored or temporary, never both: a reply
		// must not land in a tab that expects the other kind.
		c.mu.Unlock()
		_ = wsjson.Write(ctx, ws, Frame{Type: "error", Text: "this chat id is open in another tab as a different kind of chat (temporary or stored)"})
		ws.Close(websocket.StatusPolicyViolation, "chat kind mismatch")
		return
	}
	if c.conns[chat] == nil {
		c.conns[chat] = map[*conn]bool{}
	}
	c.conns[chat][cn] = true
	if hello.Temporary && c.temps[chat] == nil {
		c.temps[chat] = &tempChat{answers: map[string]int{}}
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.conns[chat], cn)
		if len(c.conns[chat]) == 0 {
			delete(c.conns, chat)
			delete(c.temps, chat) // a temporary chat ends with its last tab
		}
		c.mu.Unlock()
	}()
	_ = cn.write(ctx, Frame{Type: "hello", Chat: chat, Temporary: hello.Temporary})

	for {
		typ, data, err := ws.Read(ctx)
		if err != nil {
			return
		}
		var f Frame
		if err := json.Unmarshal(data, &f); err != nil || typ != websocket.MessageText {
			// A broken frame costs that frame, not the tab's connection.
			c.log.Warn("web chat: malformed frame skipped", "chat", chat, "bytes", len(data))
			continue
		}
		if f.Type == "message" { // unknown frames are ignored, not fatal
			c.message(ctx, cn, chat, admin, f)
		}
	}
}

// message takes one chat message from a tab: checked, numbered, kept in a
// temporary chat's own history when the chat is temporary, and delivered
// to the inbox. What goes wrong is told to that tab.
func (c *Channel) message(ctx context.Context, cn *conn, chat string, admin bool, f Frame) {
	text := strings.TrimSpace(f.Text)
	if text == "" {
		return
	}
	if len([]rune(text)) > c.cfg.MaxMessageChars {
		_ = cn.write(ctx, Frame{Type: "error", Text: fmt.Sprintf("message too long (max %d characters)", c.cfg.MaxMessageChars)})
		return
	}
	m := bus.Inbound{Channel: "web", SenderID: chat, ChatID: chat, Content: text, ReceivedAt: time.Now(), Admin: admin}
	in := c.waitInbox(ctx)
	c.mu.Lock()
	c.seq++
	m.MessageID = fmt.Sprintf("u%d-%d", time.Now().UnixNano(), c.seq)
	tc := c.temps[chat]
	c.mu.Unlock()
	if id := sanitizeID(f.ID); id != "" {
		// The browser's own id: a resend after a dropped socket is then
		// recognised as the same message.
		m.MessageID = id
	}
	if in == nil {
		_ = cn.write(ctx, Frame{Type: "error", Text: "the gateway is starting or stopping; send the message again in a moment"})
		return
	}
	if tc != nil {
		allowed, command := tempCommand(text)
		if !allowed {
			_ = cn.write(ctx, Frame{Type: "error", Text: "a temporary chat takes no commands but /stop and /help (nothing of it is stored)"})
			return
		}
		if !command {
			c.mu.Lock()
			m.Ephemeral, m.History = true, tc.history()
			tc.add(bus.Turn{Role: "user", Content: text})
			c.mu.Unlock()
		}
	}
	if err := in.Deliver(ctx, m); err != nil && !errors.Is(err, channels.ErrDenied) {
		_ = cn.write(ctx, Frame{Type: "error", Text: "could not queue the message; please retry"})
	}
}

// sanitizeChat keeps browser-chosen ids short and safe; an empty one gets a
// random id.
func sanitizeChat(s string) string {
	var b strings.Builder
	for _, r := range s {
		if (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') || r == '-' || r == '_' {
			b.WriteRune(r)
		}
		if b.Len() >= 64 {
			break
		}
	}
	if b.Len() < 8 {
		var raw [8]byte
		_, _ = rand.Read(raw[:])
		return hex.EncodeToString(raw[:])
	}
	return b.String()
}

// sanitizeID keeps a browser-chosen message id if it is short and made of
// safe characters, else "".
func sanitizeID(s string) string {
	if s == "" || len(s) > 64 {
		return ""
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '-' && r != '_' {
			return ""
		}
	}
	return "c-" + s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
