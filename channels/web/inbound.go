package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/bus"
)

func (c *Channel) serveWS(w http.ResponseWriter, r *http.Request) {
	genuine := c.genuineLoopback(r)
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
	tokenOK := c.token != "" && subtle.ConstantTimeCompare([]byte(hello.Token), []byte(c.token)) == 1
	if !tokenOK && (c.tokenAlways || !genuine) {
		_ = wsjson.Write(ctx, ws, Frame{Type: "error", Text: "wrong or missing access token"})
		ws.Close(websocket.StatusPolicyViolation, "unauthorized")
		c.log.Warn("web chat: wrong or missing token", "remote", r.RemoteAddr, "host", truncate(r.Host, 100), "genuine_loopback", genuine)
		return
	}
	// Both ways in (this machine's own browser, or the token) are the
	// owner's: such a connection may approve pairing codes.
	admin := genuine || tokenOK
	chat := sanitizeChat(hello.Chat)
	cn := &conn{ws: ws, chat: chat}
	c.mu.Lock()
	if c.conns[chat] == nil {
		c.conns[chat] = map[*conn]bool{}
	}
	c.conns[chat][cn] = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.conns[chat], cn)
		if len(c.conns[chat]) == 0 {
			delete(c.conns, chat)
		}
		c.mu.Unlock()
	}()
	_ = cn.write(ctx, Frame{Type: "hello", Chat: chat})

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
		if f.Type != "message" {
			continue // unknown frames are ignored, not fatal
		}
		text := strings.TrimSpace(f.Text)
		if text == "" {
			continue
		}
		if len([]rune(text)) > c.cfg.MaxMessageChars {
			_ = cn.write(ctx, Frame{Type: "error", Text: fmt.Sprintf("message too long (max %d characters)", c.cfg.MaxMessageChars)})
			continue
		}
		c.mu.Lock()
		in := c.inbox
		c.seq++
		msgID := fmt.Sprintf("u%d-%d", time.Now().UnixNano(), c.seq)
		c.mu.Unlock()
		if id := sanitizeID(f.ID); id != "" {
			// The browser's own id: a resend after a dropped socket is then
			// recognised as the same message.
			msgID = id
		}
		if in == nil {
			_ = cn.write(ctx, Frame{Type: "error", Text: "the gateway is not ready yet"})
			continue
		}
		err = in.Deliver(ctx, bus.Inbound{
			Channel: "web", SenderID: chat, ChatID: chat, Content: text,
			MessageID: msgID, ReceivedAt: time.Now(), Admin: admin,
		})
		if err != nil && !errors.Is(err, channels.ErrDenied) {
			_ = cn.write(ctx, Frame{Type: "error", Text: "could not queue the message; please retry"})
		}
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
