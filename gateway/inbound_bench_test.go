package gateway

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// replySignal is a channel that cannot edit: each reply arrives as one
// send, which it hands to got.
type replySignal struct {
	fake *fakeChannel
	got  chan string
}

func (r *replySignal) Name() string { return r.fake.Name() }
func (r *replySignal) Run(ctx context.Context, in channels.Inbox) error {
	return r.fake.Run(ctx, in)
}
func (r *replySignal) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	r.got <- m.Content
	return channels.MessageRef{ChatID: m.ChatID, MessageID: "x"}, nil
}

// BenchmarkInboundToReply is one message at a time, 50 to a chat, through
// the whole gateway on its defaults (but no reply cap) — the channel's inbox, the journal
// (fsynced, in a temporary folder on disk), the gate, the agent loop with
// the session file, the context and the workspace, a model answering at
// once, the dispatcher and the outbox — to the reply's send. ns/op is the
// per-message latency a user sees less the platform's and the model's
// time; allocs/op counts every goroutine's allocations on that path.
//
//	go test -run XXX -bench InboundToReply -benchmem ./gateway/
func BenchmarkInboundToReply(b *testing.B) {
	ch := &replySignal{fake: newFake("bench"), got: make(chan string, 1)}
	cfg := testConfig(map[string][]any{"bench": {"*"}})
	cfg.Agents.Defaults.MaxRepliesPerMinute = 0 // thousands a minute here
	startGateway(b, cfg, &echoLLM{}, ch)
	i := 0
	send := func() {
		i++
		text := fmt.Sprint("message ", i)
		// A conversation of 50 messages per chat, so the history (and
		// its copying) stays the size of a real one however large b.N.
		chat := fmt.Sprint("c", i/50)
		ch.fake.in <- bus.Inbound{Channel: "bench", ChatID: chat, SenderID: "u1", Content: text, MessageID: fmt.Sprint(i)}
		select {
		case got := <-ch.got:
			if got != "echo: "+text {
				b.Fatalf("reply %q to %q", got, text)
			}
		case <-time.After(30 * time.Second):
			b.Fatalf("no reply to %q", text)
		}
	}
	send() // the first turn creates the session and warms the caches
	b.ReportAllocs()
	for b.Loop() {
		send()
	}
}
