package webui

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/relay"
)

func TestChannelsAndPairing(t *testing.T) {
	pairing := relay.NewPairingStore(filepath.Join(t.TempDir(), "pairing.json"))
	since := time.Date(2026, 5, 1, 11, 0, 0, 0, time.UTC)
	health := func() map[string]channels.Health {
		return map[string]channels.Health{
			"web":      {State: channels.StateConnected, Since: since},
			"telegram": {State: channels.StateReconnecting, LastError: "getUpdates: 502 Bad Gateway", Since: since, Restarts: 2},
		}
	}
	b := newBench(t, false, true, func(o *Options) { o.Health = health; o.Pairing = pairing })
	if code, _, _ := b.do("GET", "/api/channels", "", nil); code != 401 {
		t.Fatalf("channels before login: %d, want 401", code)
	}
	if code, _, _ := b.login(testPassword); code != 200 {
		t.Fatal("login failed")
	}
	yes, _, err := pairing.Request("telegram", "111", "111")
	if err != nil {
		t.Fatal(err)
	}
	no, _, err := pairing.Request("telegram", "222", "222")
	if err != nil {
		t.Fatal(err)
	}

	code, body, _ := b.do("GET", "/api/channels", "", nil)
	if code != 200 {
		t.Fatalf("GET /api/channels: %d %v", code, body)
	}
	chs := body["channels"].([]any)
	if len(chs) != 2 {
		t.Fatalf("channels %v", chs)
	}
	tg := chs[0].(map[string]any)
	if tg["name"] != "telegram" || tg["state"] != "reconnecting" || tg["lastError"] != "getUpdates: 502 Bad Gateway" || tg["restarts"] != 2.0 {
		t.Errorf("telegram card %v", tg)
	}
	if n := len(body["pending"].([]any)); n != 2 {
		t.Fatalf("%d pending, want 2", n)
	}

	tok := b.csrf()
	hdr := map[string]string{"X-CSRF-Token": tok}
	if code, _, _ := b.do("POST", "/api/pairing/"+yes+"/approve", "", nil); code != 403 {
		t.Errorf("approve without CSRF: %d, want 403", code)
	}
	if pairing.IsApproved("telegram", "111") {
		t.Fatal("approved without the CSRF token")
	}
	if code, body, _ := b.do("POST", "/api/pairing/"+yes+"/approve", "", hdr); code != 200 {
		t.Fatalf("approve: %d %v", code, body)
	}
	if code, body, _ := b.do("POST", "/api/pairing/"+no+"/deny", "", hdr); code != 200 {
		t.Fatalf("deny: %d %v", code, body)
	}
	if code, body, _ := b.do("POST", "/api/pairing/"+no+"/approve", "", hdr); code != 404 || body["path"] != "code" {
		t.Errorf("approve a denied code: %d %v, want 404 on path code", code, body)
	}
	if !pairing.IsApproved("telegram", "111") || pairing.IsApproved("telegram", "222") {
		t.Errorf("approved 111: %v (want true), 222: %v (want false)", pairing.IsApproved("telegram", "111"), pairing.IsApproved("telegram", "222"))
	}
	_, body, _ = b.do("GET", "/api/channels", "", nil)
	if ap := body["approved"].([]any); len(ap) != 1 || ap[0].(map[string]any)["senderId"] != "111" || len(body["pending"].([]any)) != 0 {
		t.Errorf("after the decisions: approved %v pending %v", body["approved"], body["pending"])
	}
	if code, _, _ := b.do("DELETE", "/api/pairing/approved/telegram/111", "", nil); code != 403 {
		t.Errorf("revoke without CSRF: %d, want 403", code)
	}
	if code, body, _ := b.do("DELETE", "/api/pairing/approved/telegram/111", "", hdr); code != 200 {
		t.Fatalf("revoke: %d %v", code, body)
	}
	if pairing.IsApproved("telegram", "111") {
		t.Error("revoked sender still approved")
	}
	if code, body, _ := b.do("DELETE", "/api/pairing/approved/telegram/111", "", hdr); code != 404 || body["path"] != "sender" {
		t.Errorf("revoke again: %d %v, want 404 on path sender", code, body)
	}
}
