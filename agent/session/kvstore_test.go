package session

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/nanobot-go/nanobot/gateway/natsbus/natstest"
)

func jetstreamNew(nc *nats.Conn) (jetstream.JetStream, error) { return jetstream.New(nc) }

// Two workers on one bucket: a session that moved is re-read, and a worker
// holding a stale copy cannot write over the new owner's turn.
func TestKVStoreTwoWorkers(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	newStore := func() *KVStore {
		js, err := jetstream.New(srv.Connect(t))
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewKVStore(ctx, js, KVStoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ka, kb := newStore(), newStore()
	sa, err := ka.Load(ctx, "s")
	must(t, err)
	must(t, ka.Append(ctx, sa, u("one"), a("1")))
	sb, err := kb.Load(ctx, "s")
	must(t, err)
	must(t, kb.Append(ctx, sb, u("two"), a("2")))

	// a's copy is stale: its write is refused and the copy refreshed.
	if err := ka.Append(ctx, sa, u("stale")); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale append: %v, want ErrConflict", err)
	}
	if got := contents(sa.Messages); len(got) != 4 || got[2] != "user:two" {
		t.Errorf("stale copy not refreshed: %v", got)
	}
	// Load serves the other worker's writes, not the cached copy.
	must(t, kb.Append(ctx, sb, u("three")))
	again, err := ka.Load(ctx, "s")
	must(t, err)
	if again != sa || len(again.Messages) != 5 {
		t.Errorf("Load after another worker wrote: same=%v messages=%d", again == sa, len(again.Messages))
	}
}
