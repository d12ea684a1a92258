package agent

import (
	"context"
	"errors"
	"testing"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools/sessions"
)

// The session tools reach stored conversations only: a key never written
// (which Load answers with an empty stand-in) is not found, so
// send_session_message cannot open a conversation in any chat it names.
func TestSessionSourceReadsStoredConversationsOnly(t *testing.T) {
	ctx := context.Background()
	store, err := session.NewFileStore(t.TempDir(), session.FileStoreOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	src := sessionSource{store: store}
	for _, key := range []string{"telegram:123", "api:nonexistent", "../../config.json"} {
		if _, _, err := src.Read(ctx, key); !errors.Is(err, sessions.ErrNotFound) {
			t.Errorf("%s: %v, want not found", key, err)
		}
	}
	sess, err := store.Load(ctx, "telegram:42")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Append(ctx, sess, providers.Message{Role: providers.RoleUser, Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	if sum, _, err := src.Read(ctx, "telegram:42"); err != nil || sum.Chat != "42" {
		t.Errorf("a stored conversation: %+v %v", sum, err)
	}
	if err := store.Archive(ctx, sess); err != nil { // /new: stored, and empty
		t.Fatal(err)
	}
	if _, _, err := src.Read(ctx, "telegram:42"); err != nil {
		t.Errorf("an emptied conversation: %v", err)
	}
}
