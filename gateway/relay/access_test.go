package relay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

type recorder struct {
	mu   sync.Mutex
	in   []bus.Inbound
	outs []bus.Outbound
}

func (r *recorder) Deliver(_ context.Context, m bus.Inbound) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.in = append(r.in, m)
	return nil
}

func (r *recorder) reply(_ context.Context, m bus.Outbound) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outs = append(r.outs, m)
	return nil
}

func TestAllowList(t *testing.T) {
	tests := []struct {
		allow  []string
		sender string
		want   bool
	}{
		{nil, "1", false},
		{[]string{}, "1", false},
		{[]string{"*"}, "anyone", true},
		{[]string{"42"}, "42", true},
		{[]string{"42"}, "43", false},
		{[]string{"alice"}, "42|alice", true},
		{[]string{"@Alice"}, "42|alice", true},
		{[]string{"42"}, "42|alice", true},
		{[]string{"4"}, "42|alice", false},
		{[]string{"alice"}, "", false},
	}
	for _, tt := range tests {
		r := &recorder{}
		g := &Gate{AllowFrom: map[string][]string{"tg": tt.allow}, Next: r}
		err := g.Deliver(context.Background(), bus.Inbound{Channel: "tg", SenderID: tt.sender, ChatID: "c", IsGroup: true})
		if got := channels.Admits(g, "tg", tt.sender); got != tt.want {
			t.Errorf("allow %v sender %q: Admits=%v, want %v", tt.allow, tt.sender, got, tt.want)
		}
		if got := err == nil; got != tt.want {
			t.Errorf("allow %v sender %q: admitted=%v, want %v (err %v)", tt.allow, tt.sender, got, tt.want, err)
		}
		if !tt.want && !errors.Is(err, channels.ErrDenied) {
			t.Errorf("denied with %v, want ErrDenied", err)
		}
	}
}

func TestPairingFlow(t *testing.T) {
	dir := t.TempDir()
	store := NewPairingStore(filepath.Join(dir, "pairing.json"))
	r := &recorder{}
	g := &Gate{AllowFrom: map[string][]string{"tg": {"owner"}}, Pairing: store, Next: r, Reply: r.reply}
	ctx := context.Background()

	// A stranger in a direct chat gets a code, once.
	for range 2 {
		if err := g.Deliver(ctx, bus.Inbound{Channel: "tg", SenderID: "99|stranger", ChatID: "dm99", Content: "hi"}); !errors.Is(err, channels.ErrDenied) {
			t.Fatalf("stranger: %v", err)
		}
	}
	if len(r.in) != 0 || len(r.outs) != 1 {
		t.Fatalf("stranger reached the agent (%d) or got %d replies", len(r.in), len(r.outs))
	}
	pending := store.Pending()
	if len(pending) != 1 || !strings.Contains(r.outs[0].Content, pending[0].Code) {
		t.Fatalf("pending %v, reply %q", pending, r.outs[0].Content)
	}
	code := pending[0].Code

	// A stranger in a group gets nothing.
	_ = g.Deliver(ctx, bus.Inbound{Channel: "tg", SenderID: "77", ChatID: "grp", IsGroup: true})
	if len(store.Pending()) != 1 {
		t.Error("group stranger got a pairing code")
	}

	// The owner approves from chat (lower case, no dash accepted).
	lower := strings.ToLower(strings.ReplaceAll(code, "-", ""))
	if err := g.Deliver(ctx, bus.Inbound{Channel: "tg", SenderID: "1|owner", ChatID: "dm1", Content: "/pairing approve " + lower}); err != nil {
		t.Fatal(err)
	}
	if len(r.in) != 0 {
		t.Error("the approve command reached the agent")
	}
	if err := g.Deliver(ctx, bus.Inbound{Channel: "tg", SenderID: "99|stranger", ChatID: "dm99", Content: "hello again"}); err != nil {
		t.Fatalf("approved sender denied: %v", err)
	}
	if len(r.in) != 1 {
		t.Fatal("approved sender did not reach the agent")
	}
	if !g.Admits("tg", "99|stranger") {
		t.Error("Admits false for a sender approved by pairing")
	}

	// Approvals persist: a fresh store (another process) sees them.
	if !NewPairingStore(filepath.Join(dir, "pairing.json")).IsApproved("tg", "99|stranger") {
		t.Error("approval not persisted")
	}
	if _, err := store.Approve(code); !errors.Is(err, ErrUnknownCode) {
		t.Errorf("second approve: %v", err)
	}
}

func TestPairingLimitsAndExpiry(t *testing.T) {
	store := NewPairingStore(filepath.Join(t.TempDir(), "p.json"))
	now := time.Now()
	store.now = func() time.Time { return now }
	for i := range MaxPendingPerChan {
		if _, created, err := store.Request("tg", string(rune('a'+i)), "c"); err != nil || !created {
			t.Fatalf("request %d: %v %v", i, created, err)
		}
	}
	if _, _, err := store.Request("tg", "z", "c"); !errors.Is(err, ErrTooManyPending) {
		t.Errorf("over the cap: %v", err)
	}
	code := store.Pending()[0].Code
	now = now.Add(PairingTTL + time.Second)
	if len(store.Pending()) != 0 {
		t.Error("expired codes still pending")
	}
	if _, err := store.Approve(code); !errors.Is(err, ErrUnknownCode) {
		t.Errorf("approve expired: %v", err)
	}
	if _, created, err := store.Request("tg", "z", "c"); err != nil || !created {
		t.Errorf("after expiry: %v %v", created, err)
	}
}

func TestCrossProcessApproval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.json")
	gateway := NewPairingStore(path)
	code, _, err := gateway.Request("tg", "5", "c")
	if err != nil {
		t.Fatal(err)
	}
	if gateway.IsApproved("tg", "5") {
		t.Fatal("approved too early")
	}
	cli := NewPairingStore(path)
	if _, err := cli.Approve(code); err != nil {
		t.Fatal(err)
	}
	// Make sure the mtime moves even on coarse file systems.
	later := time.Now().Add(2 * time.Second)
	_ = os.Chtimes(path, later, later)
	if !gateway.IsApproved("tg", "5") {
		t.Error("gateway did not see the CLI's approval")
	}
}
