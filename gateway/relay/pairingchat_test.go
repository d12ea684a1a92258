package relay

import (
	"context"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
)

// TestPairingCommandsInChat: an admin lists, denies and revokes from the
// chat; anyone else is refused and nothing changes; none of it reaches
// the agent.
func TestPairingCommandsInChat(t *testing.T) {
	g, r, store, code := pairingSetup(t, []string{"owner"}, nil)
	say := func(sender, text string) string {
		t.Helper()
		_ = g.Deliver(context.Background(), bus.Inbound{Channel: "tg", SenderID: sender, ChatID: "c-" + sender, Content: text})
		return r.lastReply("c-" + sender)
	}
	if got := say("1|owner", "/pairing list"); !strings.Contains(got, code) || !strings.Contains(got, "tg:99|stranger") || !strings.Contains(got, "Nobody approved") {
		t.Errorf("list:\n%s", got)
	}
	// A stranger approved earlier, then one waiting.
	if _, err := store.Approve(code); err != nil {
		t.Fatal(err)
	}
	code2, _, _ := store.Request("tg", "77|second", "dm77")
	if got := say("1|owner", "/pairing list"); !strings.Contains(got, code2) || !strings.Contains(got, "tg:99|stranger") {
		t.Errorf("list after an approval:\n%s", got)
	}
	// Not an admin: refused, nothing changes.
	for _, cmd := range []string{"/pairing list", "/pairing deny " + code2, "/pairing revoke tg:99|stranger"} {
		if got := say("99|stranger", cmd); got != "Only an admin can manage pairing." {
			t.Errorf("%s from a paired non-admin: %q", cmd, got)
		}
	}
	if !store.IsApproved("tg", "99|stranger") || len(store.Pending()) != 1 {
		t.Fatal("a non-admin changed pairing")
	}
	if got := say("1|owner", "/pairing deny "+code2); !strings.HasPrefix(got, "Denied 77|second on tg") || len(store.Pending()) != 0 || store.IsApproved("tg", "77|second") {
		t.Errorf("deny: %q, pending %d", got, len(store.Pending()))
	}
	if got := say("1|owner", "/pairing deny ZZZZ-ZZZZ"); !strings.HasPrefix(got, "Could not deny") {
		t.Errorf("deny of an unknown code: %q", got)
	}
	if got := say("1|owner", "/pairing revoke tg:99|stranger"); !strings.HasPrefix(got, "Revoked 99|stranger on tg") || store.IsApproved("tg", "99|stranger") {
		t.Errorf("revoke: %q", got)
	}
	if got := say("1|owner", "/pairing revoke tg:1|owner"); !strings.Contains(got, "was not approved by pairing") {
		t.Errorf("revoke of a sender in allowFrom: %q", got)
	}
	if got := say("1|owner", "/pairing revoke stranger"); !strings.HasPrefix(got, "Usage:") {
		t.Errorf("revoke without a channel: %q", got)
	}
	if len(r.in) != 0 {
		t.Errorf("pairing commands reached the agent: %+v", r.in)
	}
}

// TestPairingAnswersReplyToTheCommand: the gate answers a /pairing command
// in its chat and thread, as a reply carrying its metadata (as the agent
// answers), so a channel answering commands in place (a Discord slash
// command's deferred response) finds what it answers.
func TestPairingAnswersReplyToTheCommand(t *testing.T) {
	g, r, _, code := pairingSetup(t, []string{"owner"}, nil)
	meta := bus.Metadata{"interaction_id": "i-1"}
	for _, text := range []string{"/pairing list", "/pairing approve " + code} {
		_ = g.Deliver(context.Background(), bus.Inbound{Channel: "tg", SenderID: "1|owner", ChatID: "c1", ThreadID: "t9",
			MessageID: "m-" + text, Content: text, Metadata: meta})
		r.mu.Lock()
		got := r.outs[len(r.outs)-1]
		r.mu.Unlock()
		if got.ChatID != "c1" || got.ReplyTo != "m-"+text || got.ThreadID != "t9" || got.Metadata["interaction_id"] != "i-1" || got.SessionKey != "tg:c1" || !got.Final {
			t.Errorf("%s: answer %+v, want a final reply to the command in its chat and thread, with its metadata", text, got)
		}
	}
}
