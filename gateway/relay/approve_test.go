package relay

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
)

// pairingSetup gives a gate whose store holds one pending code, requested by
// a stranger on "tg".
func pairingSetup(t *testing.T, allow, admins []string) (*Gate, *recorder, *PairingStore, string) {
	t.Helper()
	store := NewPairingStore(filepath.Join(t.TempDir(), "pairing.json"))
	r := &recorder{}
	g := &Gate{AllowFrom: map[string][]string{"tg": allow, "web": {"*"}}, Admins: map[string][]string{"tg": admins},
		Pairing: store, Next: r, Reply: r.reply}
	code, _, err := store.Request("tg", "99|stranger", "dm99")
	if err != nil {
		t.Fatal(err)
	}
	return g, r, store, code
}

func (r *recorder) lastReply(chat string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.outs) - 1; i >= 0; i-- {
		if r.outs[i].ChatID == chat {
			return r.outs[i].Content
		}
	}
	return ""
}

func TestPairingApproveNeedsAdmin(t *testing.T) {
	tests := []struct {
		name    string
		allow   []string
		admins  []string
		in      bus.Inbound
		approve bool
	}{
		{"everyone allowed is not everyone admin", []string{"*"}, nil, bus.Inbound{Channel: "tg", SenderID: "5|mallory"}, false},
		{"named in allowFrom, no admins list", []string{"owner"}, nil, bus.Inbound{Channel: "tg", SenderID: "1|owner"}, true},
		{"named among a wildcard", []string{"*", "owner"}, nil, bus.Inbound{Channel: "tg", SenderID: "1|owner"}, true},
		{"on the admins list", []string{"*"}, []string{"boss"}, bus.Inbound{Channel: "tg", SenderID: "2|boss"}, true},
		{"allowed but not on the admins list", []string{"owner", "boss"}, []string{"boss"}, bus.Inbound{Channel: "tg", SenderID: "1|owner"}, false},
		{"wildcard in admins names nobody", []string{"*"}, []string{"*"}, bus.Inbound{Channel: "tg", SenderID: "5|mallory"}, false},
		{"admin who is not allowed", []string{"owner"}, []string{"boss"}, bus.Inbound{Channel: "tg", SenderID: "2|boss"}, false},
		{"channel vouches (web on loopback)", []string{"owner"}, nil, bus.Inbound{Channel: "web", SenderID: "tab", Admin: true}, true},
		{"channel does not vouch", []string{"owner"}, nil, bus.Inbound{Channel: "web", SenderID: "tab"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, r, store, code := pairingSetup(t, tt.allow, tt.admins)
			m := tt.in
			m.ChatID, m.Content = "admin-chat", "/pairing approve "+code
			_ = g.Deliver(context.Background(), m)
			if got := store.IsApproved("tg", "99|stranger"); got != tt.approve {
				t.Fatalf("stranger approved = %v, want %v (reply %q)", got, tt.approve, r.lastReply("admin-chat"))
			}
			reply := r.lastReply("admin-chat")
			if !tt.approve && reply != "Only an admin can approve pairing codes." && !strings.Contains(reply, "pairing code is") {
				t.Errorf("refusal reply %q", reply)
			}
			if len(r.in) != 0 {
				t.Errorf("the approve command reached the agent: %+v", r.in)
			}
		})
	}

	// A sender approved by pairing is allowed, but not an admin: one
	// approved stranger cannot approve the next.
	g, r, store, _ := pairingSetup(t, []string{"owner"}, nil)
	if _, err := store.Approve(store.Pending()[0].Code); err != nil {
		t.Fatal(err)
	}
	code2, _, _ := store.Request("tg", "77|second", "dm77")
	_ = g.Deliver(context.Background(), bus.Inbound{Channel: "tg", SenderID: "99|stranger", ChatID: "dm99", Content: "/pairing approve " + code2})
	if store.IsApproved("tg", "77|second") || r.lastReply("dm99") != "Only an admin can approve pairing codes." {
		t.Errorf("paired sender approved another: reply %q", r.lastReply("dm99"))
	}
}

func TestGateMarksAdmins(t *testing.T) {
	r := &recorder{}
	g := &Gate{AllowFrom: map[string][]string{"tg": {"*", "owner"}}, Next: r}
	for _, s := range []string{"1|owner", "2|guest"} {
		if err := g.Deliver(context.Background(), bus.Inbound{Channel: "tg", SenderID: s, Content: "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.in) != 2 || !r.in[0].Admin || r.in[1].Admin {
		t.Fatalf("admin marks: got %+v, want owner admin and guest not", r.in)
	}
	g.SetAdmins(map[string][]string{"tg": {"guest"}})
	_ = g.Deliver(context.Background(), bus.Inbound{Channel: "tg", SenderID: "1|owner", Content: "hi"})
	if r.in[2].Admin {
		t.Error("owner still admin after admins were set to guest only")
	}
}

func TestPairingApproveBackoff(t *testing.T) {
	g, r, store, code := pairingSetup(t, []string{"owner"}, nil)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	g.attempts = newAttemptLimiter(func() time.Time { return now })
	ctx := context.Background()
	send := func(sender, text string) string {
		_ = g.Deliver(ctx, bus.Inbound{Channel: "tg", SenderID: sender, ChatID: "c-" + sender, Content: text})
		return r.lastReply("c-" + sender)
	}

	// 200 wrong codes: only the free attempts reach the store.
	checked, refused := 0, 0
	start := time.Now()
	for i := range 200 {
		switch reply := send("1|owner", fmt.Sprintf("/pairing approve WRNG-%04d", i)); {
		case strings.HasPrefix(reply, "Could not approve"):
			checked++
		case strings.HasPrefix(reply, "Too many wrong pairing codes. Try again in 30s."):
			refused++
		default:
			t.Fatalf("attempt %d: reply %q", i, reply)
		}
	}
	t.Logf("200 wrong codes: %d checked, %d refused without a check, in %v", checked, refused, time.Since(start))
	if checked != attemptsFree || refused != 200-attemptsFree {
		t.Fatalf("checked %d, refused %d; want %d checked", checked, refused, attemptsFree)
	}
	// Inside the window even the right code is not checked.
	if reply := send("1|owner", "/pairing approve "+code); !strings.HasPrefix(reply, "Too many") || store.IsApproved("tg", "99|stranger") {
		t.Fatalf("right code inside the back-off: %q", reply)
	}
	// The back-off is per sender.
	g.AllowFrom["tg"] = []string{"owner", "other"}
	if reply := send("3|other", "/pairing approve WRNG-0000"); !strings.HasPrefix(reply, "Could not approve") {
		t.Errorf("another admin was throttled: %q", reply)
	}

	// Exponential: 30 s later one more wrong code is checked and doubles the wait.
	now = now.Add(30 * time.Second)
	if reply := send("1|owner", "/pairing approve WRNG-9999"); !strings.Contains(reply, "try again in 1m0s") {
		t.Fatalf("after the first window: %q", reply)
	}
	now = now.Add(59 * time.Second)
	if reply := send("1|owner", "/pairing approve "+code); !strings.Contains(reply, "Try again in 1s") {
		t.Fatalf("inside the doubled window: %q", reply)
	}
	now = now.Add(time.Second)
	if reply := send("1|owner", "/pairing approve "+code); !strings.HasPrefix(reply, "Approved 99|stranger") {
		t.Fatalf("right code after the window: %q", reply)
	}
	// Success resets the count: the next wrong code is a plain miss.
	if reply := send("1|owner", "/pairing approve WRNG-0001"); reply != "Could not approve: unknown or expired pairing code." {
		t.Errorf("after a success: %q", reply)
	}
}

func TestAttemptLimiterBounded(t *testing.T) {
	now := time.Now()
	l := newAttemptLimiter(func() time.Time { return now })
	for i := range attemptsCap + 100 {
		l.fail(fmt.Sprint("k", i))
		now = now.Add(time.Millisecond)
	}
	if n := l.len(); n > attemptsCap {
		t.Fatalf("limiter holds %d entries, cap %d", n, attemptsCap)
	}
	for range attemptsFree {
		l.fail("hot")
	}
	if l.wait("hot") != attemptsBase {
		t.Errorf("wait %v, want %v", l.wait("hot"), attemptsBase)
	}
	for range 100 {
		l.fail("hot")
	}
	if w := l.wait("hot"); w != attemptsMax {
		t.Errorf("wait after 100 more %v, want the cap %v", w, attemptsMax)
	}
}
