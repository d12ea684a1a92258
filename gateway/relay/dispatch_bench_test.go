package relay

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// doneChannel signals each final text it is shown, sent or edited.
type doneChannel struct {
	*fakeChannel
	final chan string
}

func (d doneChannel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	ref, err := d.fakeChannel.Send(ctx, m)
	if m.Final {
		d.final <- m.Content
	}
	return ref, err
}

func (d doneChannel) Edit(_ context.Context, _ channels.MessageRef, m bus.Outbound) error {
	if m.Final {
		d.final <- m.Content
	}
	return nil
}

func (d doneChannel) EditInterval() time.Duration { return 0 }

// BenchmarkDispatchDeltas pushes streamed replies of 50 deltas each through
// the dispatcher (merging, edits, the final edit); one op is one reply.
//
//	go test -run '^$' -bench DispatchDeltas ./channels/
func BenchmarkDispatchDeltas(b *testing.B) {
	fc := &fakeChannel{name: "c", limit: 4096}
	ch := doneChannel{fakeChannel: fc, final: make(chan string, 1)}
	out := make(chan bus.Outbound, 100)
	d := NewDispatcher(DispatcherConfig{}, []channels.Channel{ch})
	done := make(chan struct{})
	go func() { _ = d.Run(context.Background(), out); close(done) }()
	defer func() { close(out); <-done }()
	deltas := make([]string, 50)
	for i := range deltas {
		deltas[i] = fmt.Sprintf("word%02d ", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprint("s", i)
		full := ""
		for _, w := range deltas {
			out <- bus.Outbound{Channel: "c", ChatID: "1", Kind: bus.KindDelta, StreamID: id, Content: w}
			full += w
		}
		// The final text differs from the last delta's (as after Markdown
		// clean-up), so the dispatcher makes a final edit the benchmark can
		// wait for; an unchanged text is not edited again.
		full += "."
		out <- bus.Outbound{Channel: "c", ChatID: "1", Kind: bus.KindStreamEnd, StreamID: id, Content: full, Final: true}
		if got := <-ch.final; got != full {
			b.Fatalf("final %q, want %q", got, full)
		}
	}
}
