package gateway

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels/web"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/relay"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// wsOutcome opens the web chat socket at addr with the given Host and Origin
// and reports "open" (answered without a token), "token" (refused without,
// answered with the token) or "rejected NNN" (handshake refused).
func wsOutcome(t *testing.T, addr, host, origin, token string) string {
	t.Helper()
	try := func(tok string) (string, *web.Frame) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hdr := http.Header{}
		if origin != "" {
			hdr.Set("Origin", origin)
		}
		ws, resp, err := websocket.Dial(ctx, "ws://"+addr+"/ws", &websocket.DialOptions{Host: host, HTTPHeader: hdr})
		if err != nil {
			if resp == nil {
				t.Fatalf("dial %s as %s: %v", addr, host, err)
			}
			return fmt.Sprintf("rejected %d", resp.StatusCode), nil
		}
		defer ws.CloseNow()
		var f web.Frame
		if err := wsjson.Write(ctx, ws, web.Frame{Type: "auth", Chat: "matrix-tab-1", Token: tok}); err != nil {
			t.Fatal(err)
		}
		if err := wsjson.Read(ctx, ws, &f); err != nil {
			t.Fatal(err)
		}
		return "", &f
	}
	if r, f := try(""); f == nil {
		return r
	} else if f.Type == "hello" {
		return "open"
	}
	if _, f := try(token); f != nil && f.Type == "hello" {
		return "token"
	}
	return "refused even with the token"
}

func httpStatus(t *testing.T, addr, host, path string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestRebindingMatrix is the DNS-rebinding probe: a page on attacker.example
// whose name now resolves to the gateway's address sends Host
// attacker.example:PORT and a matching Origin. Every Host x Origin x bind
// combination is tried against the real gateway with a real WebSocket
// client; the outcome table is logged.
func TestRebindingMatrix(t *testing.T) {
	binds := []struct {
		name, listen string
		loopback     bool
		allowed      []string
	}{
		{"loopback", "127.0.0.1:0", true, []string{"bot.example.com"}},
		{"0.0.0.0", "0.0.0.0:0", false, []string{"bot.example.com"}},
		{"0.0.0.0, no allowedHosts", "0.0.0.0:0", false, nil},
	}
	loopbackNames := map[string]bool{"127.0.0.1": true, "localhost": true, "::1": true}
	var table []string
	for _, b := range binds {
		cfg := testConfig(nil)
		cfg.Gateway.AllowedHosts = b.allowed
		cfg.API.Enabled = false
		ln, err := net.Listen("tcp", b.listen)
		if err != nil {
			t.Fatal(err)
		}
		r := startGatewayOpts(t, cfg, &echoLLM{}, func(o *Options) { o.Listener.Close(); o.Listener = ln; o.Channels = webOnly() })
		port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
		addr := "127.0.0.1:" + port
		tok, err := os.ReadFile(filepath.Join(r.dir, "state", "web_token"))
		if err != nil {
			t.Fatalf("token file: %v", err)
		}
		token := strings.TrimSpace(string(tok))
		for _, h := range []struct{ name, header string }{
			{"127.0.0.1", "127.0.0.1:" + port}, {"localhost", "localhost:" + port}, {"::1", "[::1]:" + port},
			{"attacker.example", "attacker.example:" + port}, {"bot.example.com", "bot.example.com"},
		} {
			served := loopbackNames[h.name] || (len(b.allowed) > 0 && h.name == b.allowed[0]) || (!b.loopback && len(b.allowed) == 0)
			wantHTTP := http.StatusOK
			if !served {
				wantHTTP = http.StatusMisdirectedRequest
			}
			gotHTTP := httpStatus(t, addr, h.header, "/api/status")
			for _, origin := range []string{"", "http://" + h.header, "http://attacker.example", "http://localhost:" + port} {
				var want string
				switch {
				case !served:
					want = "rejected 421"
				case origin != "" && !strings.EqualFold(strings.TrimPrefix(origin, "http://"), h.header):
					want = "rejected 403"
				default: // loopback is not an identity: no way in without the token

					want = "token"
				}
				got := wsOutcome(t, addr, h.header, origin, token)
				shown := origin
				if shown == "" {
					shown = "(none)"
				}
				mark := ""
				if got != want || gotHTTP != wantHTTP {
					mark = "  <-- WRONG"
					t.Errorf("bind %s, Host %s, Origin %s: websocket %s (want %s), /api/status %d (want %d)", b.name, h.header, shown, got, want, gotHTTP, wantHTTP)
				}
				table = append(table, fmt.Sprintf("%-26s %-24s %-30s ws=%-13s api/status=%d%s", b.name, h.header, shown, got, gotHTTP, mark))
			}
		}
		// Probes stay open to any name; /metrics does not.
		if got := httpStatus(t, addr, "attacker.example:"+port, "/healthz"); got != http.StatusOK {
			t.Errorf("bind %s: /healthz for attacker.example: %d", b.name, got)
		}
		if got, want := httpStatus(t, addr, "attacker.example:"+port, "/metrics"), map[bool]int{true: 421, false: 200}[len(b.allowed) > 0]; got != want {
			t.Errorf("bind %s: /metrics for attacker.example: %d, want %d", b.name, got, want)
		}
		r.cancel()
	}
	t.Logf("rebinding matrix (port varies per bind):\n%-26s %-24s %-30s %s\n%s", "bind", "Host", "Origin", "outcome", strings.Join(table, "\n"))
}

// TestWebAdminApprovesPairing: the owner's own browser (with the token)
// approves a stranger's code; a chat user allowed by "*" cannot; a socket
// from loopback without the token (the agent's own command, another local
// user) is refused; the probe's rebinding page does not even get a socket.
func TestWebAdminApprovesPairing(t *testing.T) {
	fc := newFake("fake")
	cfg := testConfig(map[string][]any{"fake": {"*"}, "tg": {}})
	cfg.Channels.Platforms["tg"]["enabled"] = false // only its allow-list matters here
	r := startGatewayOpts(t, cfg, &echoLLM{}, func(o *Options) { o.Channels = webOnly() }, fc)
	store := relay.NewPairingStore(filepath.Join(r.dir, "state", "pairing.json"))
	code, _, err := store.Request("tg", "99|stranger", "dm99")
	if err != nil {
		t.Fatal(err)
	}
	// An everyone-allowed chat user is not an admin.
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c", SenderID: "5|mallory", Content: "/pairing approve " + code, MessageID: "1"}
	waitfor.True(t, "refusal", func() bool { return len(fc.texts("c")) == 1 })
	if got := fc.texts("c")[0]; got != "Only an admin can approve pairing codes." || store.IsApproved("tg", "99|stranger") {
		t.Fatalf("non-admin approve: reply %q", got)
	}
	port := r.addr[strings.LastIndex(r.addr, ":")+1:]
	if got := wsOutcome(t, r.addr, "attacker.example:"+port, "http://attacker.example:"+port, "no-token"); got != "rejected 421" {
		t.Errorf("rebinding page: %s", got)
	}

	if got := wsOutcome(t, r.addr, r.addr, "http://"+r.addr, "no-token"); got == "open" {
		t.Errorf("loopback socket without the token: %s", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+r.addr+"/ws", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://" + r.addr}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	_ = wsjson.Write(ctx, ws, web.Frame{Type: "auth", Chat: "owner-browser-tab", Token: r.token(t)})
	_ = wsjson.Write(ctx, ws, web.Frame{Type: "message", Text: "/pairing approve " + code})
	for {
		var f web.Frame
		if err := wsjson.Read(ctx, ws, &f); err != nil {
			t.Fatalf("no approval reply: %v", err)
		}
		if f.Type == "message" {
			if f.Text != "Approved 99|stranger on tg." {
				t.Fatalf("reply %q", f.Text)
			}
			break
		}
	}
	if !store.IsApproved("tg", "99|stranger") {
		t.Error("stranger not approved")
	}
}

func TestAllowedHostsValidated(t *testing.T) {
	cfg := configs.Default()
	cfg.Gateway.AllowedHosts = []string{"bot.example.com", "*.example.org", "*", "[::1]", "https://bot.example.com", "bot.example.com:443", "a*b.example", " spaced"}
	cfg.Channels.Platforms["telegram"] = map[string]any{"admins": []any{"owner", "*", ""}}
	var got []string
	for _, e := range cfg.Validate() {
		got = append(got, e.Path)
	}
	want := "channels.telegram.admins[1] channels.telegram.admins[2] gateway.allowedHosts[4] gateway.allowedHosts[5] gateway.allowedHosts[6] gateway.allowedHosts[7]"
	if strings.Join(got, " ") != want {
		t.Errorf("invalid entries reported at %v, want %s", got, want)
	}
}

// webhookFake is a platform that receives updates by webhook.
type webhookFake struct {
	*fakeChannel
	hits chan string
}

func (w *webhookFake) WebhookPath() string { return "/hook/fake" }
func (w *webhookFake) WebhookHandler() http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { w.hits <- r.Host; rw.WriteHeader(http.StatusNoContent) })
}

// Webhooks keep working behind a reverse proxy: on a loopback bind once the
// public name is in allowedHosts, and on a wide bind with no allowedHosts.
func TestWebhookBehindProxy(t *testing.T) {
	for _, tc := range []struct {
		name, listen string
		allowed      []string
		host         string
		want         int
	}{
		{"loopback, public name listed", "127.0.0.1:0", []string{"*.example.com"}, "bot.example.com", http.StatusNoContent},
		{"loopback, proxy sends the upstream address", "127.0.0.1:0", nil, "127.0.0.1:18790", http.StatusNoContent},
		{"loopback, public name not listed", "127.0.0.1:0", nil, "bot.example.com", http.StatusMisdirectedRequest},
		{"0.0.0.0, no allowedHosts", "0.0.0.0:0", nil, "bot.example.com", http.StatusNoContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wf := &webhookFake{fakeChannel: newFake("fake"), hits: make(chan string, 1)}
			cfg := testConfig(map[string][]any{"fake": {"*"}})
			cfg.Gateway.AllowedHosts = tc.allowed
			cfg.API.Enabled = false // without a key it may not listen beyond loopback
			ln, err := net.Listen("tcp", tc.listen)
			if err != nil {
				t.Fatal(err)
			}
			startGatewayOpts(t, cfg, &echoLLM{}, func(o *Options) { o.Listener.Close(); o.Listener = ln; o.Channels = webOnly() }, wf)
			req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/hook/fake", ln.Addr().(*net.TCPAddr).Port), strings.NewReader("{}"))
			req.Host = tc.host
			req.Header.Set("X-Forwarded-For", "203.0.113.9")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("webhook via Host %s: %d, want %d", tc.host, resp.StatusCode, tc.want)
			}
			if tc.want == http.StatusNoContent {
				if got := <-wf.hits; got != tc.host {
					t.Errorf("handler saw Host %q", got)
				}
			}
		})
	}
}
