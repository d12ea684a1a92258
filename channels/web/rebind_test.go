package web

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
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
// were "*"): only a genuine loopback browser goes without the token, and
// every admitted connection is an admin.
func TestLoopbackDecidedPerRequest(t *testing.T) {
	c, srv, in := start(t, DefaultConfig(), Options{Loopback: true, TokenFile: filepath.Join(t.TempDir(), "web_token")})
	if c.Token() != "" {
		t.Fatal("loopback + allowFrom * should not announce a token")
	}
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	tests := []struct {
		name, host string
		hdr        http.Header
		open       bool
	}{
		{"loopback IP", "127.0.0.1:" + port, nil, true},
		{"localhost, same-origin page", "localhost:" + port, http.Header{"Origin": {"http://localhost:" + port}}, true},
		{"IPv6 loopback", "[::1]:" + port, nil, true},
		{"rebinding: attacker name, same-origin page", "attacker.example:" + port, http.Header{"Origin": {"http://attacker.example:" + port}}, false},
		{"rebinding without Origin", "attacker.example:" + port, nil, false},
		{"reverse proxy on this machine", "127.0.0.1:" + port, http.Header{"X-Forwarded-For": {"203.0.113.9"}}, false},
		{"proxy passing the public name", "bot.example.com", nil, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chat := "tab-" + strings.Repeat("x", 8) + string(rune('a'+i))
			ws, f := dialAs(t, srv.URL, tt.host, tt.hdr, chat, "")
			if got := f.Type == "hello"; got != tt.open {
				t.Fatalf("without token: frame %+v, want open=%v", f, tt.open)
			}
			if !tt.open {
				if !strings.Contains(f.Text, "token") {
					t.Errorf("refusal %q does not mention the token", f.Text)
				}
				ws, f = dialAs(t, srv.URL, tt.host, tt.hdr, chat, c.token)
				if f.Type != "hello" {
					t.Fatalf("with token: %+v", f)
				}
			}
			before := in.len()
			_ = wsjson.Write(context.Background(), ws, Frame{Type: "message", Text: "/pairing approve X"})
			deadline := time.Now().Add(5 * time.Second)
			for in.len() == before && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			in.mu.Lock()
			defer in.mu.Unlock()
			if len(in.got) != before+1 || !in.got[before].Admin {
				t.Errorf("message not delivered as admin: %+v", in.got[before:])
			}
		})
	}
}

// Without a token file there is no way in but a genuine loopback browser.
func TestNoTokenFileOnlyLoopback(t *testing.T) {
	_, srv, _ := start(t, DefaultConfig(), Options{Loopback: true})
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	if _, f := dialAs(t, srv.URL, "attacker.example:"+port, nil, "tab-rebinding", ""); f.Type != "error" {
		t.Errorf("rebinding without token file: %+v", f)
	}
	if _, f := dialAs(t, srv.URL, "attacker.example:"+port, nil, "tab-rebinding", "guess"); f.Type != "error" {
		t.Errorf("rebinding with a guessed token: %+v", f)
	}
}
