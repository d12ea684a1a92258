package gateway

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/providers"
)

// slowLLM answers after a fixed latency, like a remote model.
type slowLLM struct {
	echoLLM
	latency time.Duration
}

func (s *slowLLM) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	select {
	case <-time.After(s.latency):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.echoLLM.Stream(ctx, req, onDelta)
}

// latencyChannel timestamps the final reply of each message. It cannot
// edit, so each reply arrives as one send.
type latencyChannel struct {
	fake  *fakeChannel
	mu    sync.Mutex
	sent  map[string]time.Time // chat/seq -> sent
	got   map[string]time.Time
	order map[string][]string // chat -> replies in order
}

func (l *latencyChannel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	l.mu.Lock()
	l.got[m.ChatID+"/"+m.Content] = time.Now()
	l.order[m.ChatID] = append(l.order[m.ChatID], m.Content)
	l.mu.Unlock()
	return channels.MessageRef{ChatID: m.ChatID, MessageID: "x"}, nil
}

func (l *latencyChannel) Name() string { return l.fake.Name() }
func (l *latencyChannel) Run(ctx context.Context, in channels.Inbox) error {
	return l.fake.Run(ctx, in)
}

// BenchmarkLoad sends M messages from each of N chats at once through the
// whole gateway (journal, gate, loop, dispatcher) with a 200 ms provider
// and reports messages/s, p50/p99 latency and the ideal for the turn cap.
//
//	go test -run XXX -bench Load -benchtime 1x ./gateway/
func BenchmarkLoad(b *testing.B) {
	for _, tc := range []struct{ chats, msgs, cap int }{{100, 3, 8}, {100, 3, 100}} {
		b.Run(fmt.Sprintf("chats=%d/cap=%d", tc.chats, tc.cap), func(b *testing.B) {
			for b.Loop() {
				runLoad(b, tc.chats, tc.msgs, tc.cap, 200*time.Millisecond)
			}
		})
	}
}

func runLoad(b *testing.B, chats, msgs, cap int, latency time.Duration) {
	fc := &latencyChannel{fake: newFake("load"), sent: map[string]time.Time{}, got: map[string]time.Time{}, order: map[string][]string{}}
	cfg := testConfig(map[string][]any{"load": {"*"}})
	cfg.Agents.Defaults.MaxConcurrentTurns = cap
	startGateway(b, cfg, &slowLLM{latency: latency}, fc)
	start := time.Now()
	for i := range msgs {
		for c := range chats {
			chat := fmt.Sprint("chat", c)
			text := fmt.Sprint("m", i)
			fc.mu.Lock()
			fc.sent[chat+"/echo: "+text] = time.Now()
			fc.mu.Unlock()
			fc.fake.in <- bus.Inbound{Channel: "load", ChatID: chat, SenderID: "u", Content: text, MessageID: fmt.Sprint(c, "-", i)}
		}
	}
	total := chats * msgs
	deadline := time.Now().Add(5 * time.Minute)
	for {
		fc.mu.Lock()
		n := len(fc.got)
		fc.mu.Unlock()
		if n >= total {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d answered", n, total)
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	var lat []time.Duration
	fc.mu.Lock()
	for k, sent := range fc.sent {
		lat = append(lat, fc.got[k].Sub(sent))
	}
	for chat, replies := range fc.order {
		for i, r := range replies {
			if r != fmt.Sprint("echo: m", i) {
				b.Fatalf("%s: reply %d is %q: order broken", chat, i, r)
			}
		}
	}
	fc.mu.Unlock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	ideal := float64(min(cap, chats)) / latency.Seconds()
	b.ReportMetric(float64(total)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(ideal, "ideal-msgs/s")
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Milliseconds()), "p99-ms")
}
