package agent

import (
	"context"
	"fmt"
	"testing"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/providers"
)

// BenchmarkTurnOverhead measures the agent's own work per turn with a
// zero-latency provider: load the session, build the context, run, save
// (no fsync), publish. It grows with history length because the whole
// history is sent each turn; it must stay near-linear.
func BenchmarkTurnOverhead(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("fine, thanks") }}
			dir := b.TempDir()
			store, err := session.NewFileStore(dir+"/sessions", session.FileStoreOptions{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			s, _ := store.Load(ctx, "test:c")
			var seed []providers.Message
			for i := range n / 2 {
				seed = append(seed,
					providers.Message{Role: "user", Content: fmt.Sprint("question number ", i, " about something fairly ordinary")},
					providers.Message{Role: "assistant", Content: fmt.Sprint("answer number ", i, " with a sentence or two of detail in it")})
			}
			if err := store.Append(ctx, s, seed...); err != nil {
				b.Fatal(err)
			}
			l := NewLoop(LoopConfig{
				Store:   store,
				Builder: &ContextBuilder{Workspace: dir},
				Runner:  &Runner{Provider: llm, Model: "m", Stream: true},
				Out:     discardOut{},
			})
			m := bus.Inbound{Channel: "test", ChatID: "c", SenderID: "u", Content: "how are you?"}
			b.ReportAllocs()
			for b.Loop() {
				if err := l.turn(ctx, m); err != nil {
					b.Fatal(err)
				}
				// Keep the history length fixed: rewind the two new messages.
				b.StopTimer()
				if err := store.Rewrite(ctx, s, s.Messages[:n], 0); err != nil {
					b.Fatal(err)
				}
				llm.requests = llm.requests[:0]
				b.StartTimer()
			}
		})
	}
}

type discardOut struct{}

func (discardOut) PublishOutbound(context.Context, bus.Outbound) error { return nil }
