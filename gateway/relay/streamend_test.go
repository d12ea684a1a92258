package relay

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// An interrupted stream nothing of which was shown sends nothing: not on
// a channel that cannot edit (whose deltas wait for the end), not with
// progress text switched on.
func TestInterruptedEndOfUnshownStreamSendsNothing(t *testing.T) {
	fc := &fakeChannel{name: "mail", limit: 4096}
	out := startDispatcher(t, DispatcherConfig{SendProgress: true}, fc)
	out <- bus.Outbound{Channel: "mail", ChatID: "x", Kind: bus.KindDelta, StreamID: "s", Content: "half an ans"}
	out <- bus.Outbound{Channel: "mail", ChatID: "x", Kind: bus.KindStreamEnd, StreamID: "s", Content: "half an ans", Interrupted: true}
	out <- bus.Outbound{Channel: "mail", ChatID: "x", Kind: bus.KindMessage, Content: "Stopped.", Final: true}
	waitfor.True(t, "the stop reply", func() bool { s, _ := fc.snapshot(); return len(s) > 0 })
	if s, _ := fc.snapshot(); len(s) != 1 || s[0].Content != "Stopped." {
		t.Errorf("sent %+v, want only the stop reply", s)
	}
}

// 100 streams left without an end (their turn's worker died): each is
// finished once it has been quiet for DefaultStreamQuiet, and the chat
// workers retire, leaving no goroutine behind.
func TestQuietStreamsExpireAndWorkersRetire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := &fakeChannel{name: "tg", interval: time.Second, limit: 4096}
		ch := finishChannel{editChannel{fc}, make(chan channels.MessageRef, 100)}
		d := NewDispatcher(DispatcherConfig{}, []channels.Channel{ch})
		out := make(chan bus.Outbound)
		done := make(chan struct{})
		go func() { _ = d.Run(context.Background(), out); close(done) }()
		const n = 100
		for i := range n {
			out <- bus.Outbound{Channel: "tg", ChatID: fmt.Sprint(i), Kind: bus.KindDelta, StreamID: "s", Content: "cut off mid"}
		}
		time.Sleep(time.Second) // the first messages are shown
		synctest.Wait()
		if st := d.Stats(); st.Chats != n || st.Streams != n {
			t.Fatalf("after %d deltas: %+v", n, st)
		}
		if s, _ := fc.snapshot(); len(s) != n {
			t.Fatalf("%d messages shown, want %d", len(s), n)
		}
		if g := workerGoroutines(); g != n {
			t.Fatalf("%d chat worker goroutines, want %d", g, n)
		}

		time.Sleep(DefaultStreamQuiet - 2*time.Second)
		synctest.Wait()
		if st := d.Stats(); st.Streams != n || len(ch.finished) != 0 {
			t.Fatalf("before the streams were quiet for %s: %+v, %d finished", DefaultStreamQuiet, st, len(ch.finished))
		}

		time.Sleep(time.Second + DefaultWorkerIdle)
		synctest.Wait()
		if st := d.Stats(); st != (DispatcherStats{}) {
			t.Errorf("after the quiet expiry and the idle time: %+v, want nothing held", st)
		}
		if len(ch.finished) != n {
			t.Errorf("%d streamed messages finished, want %d", len(ch.finished), n)
		}
		if g := workerGoroutines(); g != 0 {
			t.Errorf("%d chat worker goroutines left, want 0", g)
		}
		close(out)
		<-done
	})
}

// workerGoroutines counts the goroutines running a chat worker.
func workerGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), ".(*chatWorker).run(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// A dispatcher closed while streams are open (their ends are not coming)
// finishes their messages.
func TestCloseFinishesOpenStreams(t *testing.T) {
	fc := &fakeChannel{name: "fs", interval: 20 * time.Millisecond, limit: 4096}
	ch := finishChannel{editChannel{fc}, make(chan channels.MessageRef, 4)}
	out := make(chan bus.Outbound, 4)
	d := NewDispatcher(DispatcherConfig{}, []channels.Channel{ch})
	done := make(chan struct{})
	go func() { _ = d.Run(context.Background(), out); close(done) }()
	out <- bus.Outbound{Channel: "fs", ChatID: "1", Kind: bus.KindDelta, StreamID: "s1", Content: "never ended"}
	waitfor.True(t, "the first message", func() bool { s, _ := fc.snapshot(); return len(s) == 1 })
	close(out)
	<-done
	select {
	case ref := <-ch.finished:
		if ref.MessageID != "1" {
			t.Errorf("finished %+v, want the streamed message", ref)
		}
	default:
		t.Error("the open stream's message was not finished on close")
	}
}

// While a chat's worker is held up (its platform slow or down), what waits
// for it stays bounded: the deltas of a stream become one, typing requests
// one, and past ChatQueue the best-effort messages are dropped. Replies all
// wait, everything is reported Handled, and the chat gets its replies in
// order once the platform is back.
func TestChatQueueStaysBounded(t *testing.T) {
	fc := &fakeChannel{name: "c", limit: 4096}
	bc := &blockingChannel{fakeChannel: fc, release: make(chan struct{})}
	var handled atomic.Int64
	d := NewDispatcher(DispatcherConfig{ChatQueue: 8, SendToolHints: true, Handled: func(bus.Outbound) { handled.Add(1) }}, []channels.Channel{bc})
	out := make(chan bus.Outbound)
	done := make(chan struct{})
	go func() { _ = d.Run(context.Background(), out); close(done) }()
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(bc.release) }); close(out); <-done })

	msg := func(kind bus.Kind, text string) bus.Outbound {
		return bus.Outbound{Channel: "c", ChatID: "slow", Kind: kind, Content: text}
	}
	out <- msg(bus.KindMessage, "first")
	waitfor.True(t, "the worker held up by the first send", func() bool { s := d.Stats(); return s.Chats == 1 && s.Queued == 0 })
	total := 1
	var streamed strings.Builder
	for i := range 500 {
		m := msg(bus.KindDelta, fmt.Sprint(i, " "))
		m.StreamID = "s"
		streamed.WriteString(m.Content)
		out <- m
		total++
	}
	for range 50 {
		out <- msg(bus.KindTyping, "")
		total++
	}
	for i := range 20 {
		out <- msg(bus.KindToolHint, fmt.Sprint("hint ", i))
		total++
	}
	for _, r := range []string{"r1", "r2", "r3"} {
		out <- msg(bus.KindMessage, r)
		total++
	}
	end := msg(bus.KindStreamEnd, streamed.String())
	end.StreamID, end.Final = "s", true
	out <- end
	total++
	// Queued: the merged delta, one typing, 6 hints (the limit of 8), the
	// 3 replies and the stream's end; dropped: the 14 other hints.
	waitfor.True(t, "every message routed", func() bool { s := d.Stats(); return s.Queued+int(handled.Load()) == total-1 })
	if s := d.Stats(); s.Queued != 12 || s.Dropped != 14 {
		t.Errorf("while held up: %+v, want 12 queued and 14 dropped", s)
	}

	releaseOnce.Do(func() { close(bc.release) })
	waitfor.True(t, "every message handled", func() bool { return handled.Load() == int64(total) })
	sent, _ := fc.snapshot()
	var got []string
	for _, m := range sent {
		got = append(got, m.Content)
	}
	want := []string{"first", "🔧 hint 0", "🔧 hint 1", "🔧 hint 2", "🔧 hint 3", "🔧 hint 4", "🔧 hint 5", "r1", "r2", "r3", streamed.String()}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("sent %q\nwant %q", got, want)
	}
}
