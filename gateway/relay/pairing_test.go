package relay

import (
	"errors"
	"path/filepath"
	"testing"
)

func TestPairingDenyAndRevoke(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pairing.json")
	p := NewPairingStore(path)
	denied, _, err := p.Request("telegram", "111", "c1")
	if err != nil {
		t.Fatal(err)
	}
	kept, _, err := p.Request("telegram", "222", "c2")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Deny(denied); err != nil || got.SenderID != "111" {
		t.Fatalf("Deny = %+v, %v", got, err)
	}
	if _, err := p.Deny(denied); !errors.Is(err, ErrUnknownCode) {
		t.Errorf("second Deny: %v, want ErrUnknownCode", err)
	}
	if p.IsApproved("telegram", "111") {
		t.Error("a denied sender is approved")
	}
	if _, err := p.Approve(kept); err != nil {
		t.Fatal(err)
	}
	// Another process (the CLI) sees the approval, then the revocation.
	other := NewPairingStore(path)
	if got := other.Approved()["telegram"]; len(got) != 1 || got[0] != "222" {
		t.Fatalf("Approved = %v, want [222]", got)
	}
	if err := p.Revoke("telegram", "222"); err != nil {
		t.Fatal(err)
	}
	if other.IsApproved("telegram", "222") {
		t.Error("a revoked sender is still approved")
	}
	if err := p.Revoke("telegram", "222"); !errors.Is(err, ErrNotApproved) {
		t.Errorf("second Revoke: %v, want ErrNotApproved", err)
	}
	if len(other.Approved()) != 0 || len(other.Pending()) != 0 {
		t.Errorf("left over: approved %v pending %v", other.Approved(), other.Pending())
	}
}
