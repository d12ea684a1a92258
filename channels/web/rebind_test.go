package web

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// dialAs opens the chat socket with a chosen Host header and extra headers,
// authenticates with token and returns the first frame.
func dialAs(t *testing.T, url, host string, hdr http.Header, chat, token string) (*websocket.Conn, Frame) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/ws", &websocket.DialOptions{Host: host, HTTPHeader: hdr})
	if err != nil {
		t.Fatalf("dial as %s: %v", host, err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	if err := wsjson.Write(ctx, ws, Frame{Type: "auth", Chat: chat, Token: token}); err != nil {
		t.Fatal(err)
	}
	var f Frame
	if err := wsjson.Read(ctx, ws, &f); err != nil {
		t.Fatal(err)
	}
	return ws, f
}

// The web chat on its own (no Host check in front, as if gateway.allowedHosts
// were "*"): whatever the peer, the Host or the proxy headers say, nobody
// goes without the token, and every connection that shows it is an admin.
func TestEveryConnectionNeedsTheToken(t *testing.T) {
	c, srv, in := start(t, DefaultConfig(), Options{})
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	tests := []struct {
		name, host string
		hdr        http.Header
	}{
		{"loopback IP", "127.0.0.1:" + port, nil},
		{"localhost, same-origin page", "localhost:" + port, http.Header{"Origin": {"http://localhost:" + port}}},
		{"IPv6 loopback", "[::1]:" + port, nil},
		{"rebinding: attacker name, same-origin page", "attacker.example:" + port, http.Header{"Origin": {"http://attacker.example:" + port}}},
		{"rebinding without Origin", "attacker.example:" + port, nil},
		{"reverse proxy on this machine", "127.0.0.1:" + port, http.Header{"X-Forwarded-For": {"203.0.113.9"}}},
		{"proxy passing the public name", "bot.example.com", nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chat := "tab-" + strings.Repeat("x", 8) + string(rune('a'+i))
			_, f := dialAs(t, srv.URL, tt.host, tt.hdr, chat, "")
			if f.Type != "error" || !strings.Contains(f.Text, "token") {
				t.Fatalf("without token: frame %+v, want the token refusal", f)
			}
			ws, f := dialAs(t, srv.URL, tt.host, tt.hdr, chat, c.Token())
			if f.Type != "hello" {
				t.Fatalf("with token: %+v", f)
			}
			before := in.len()
			_ = wsjson.Write(context.Background(), ws, Frame{Type: "message", Text: "/pairing approve X"})
			waitfor.Within(t, "the message", 5*time.Second, func() bool { return in.len() > before })
			in.mu.Lock()
			defer in.mu.Unlock()
			if len(in.got) != before+1 || !in.got[before].Admin {
				t.Errorf("message not delivered as admin: %+v", in.got[before:])
			}
		})
	}
}
