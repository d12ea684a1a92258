package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
)

// replyRe finds the marker in a reply the bot sent; the brackets make sure
// a partial streamed edit never matches a longer marker.
var replyRe = regexp.MustCompile(`\[(m-\d+-\d+)\]`)

// follower watches what the bot sends on the Telegram fake and tells the
// chat waiting for a marker when its reply arrived.
type follower struct {
	fake *telegramtest.Server
	mu   sync.Mutex
	want map[string]chan time.Time
	stop chan struct{}
	done chan struct{}
}

func newFollower(fake *telegramtest.Server) *follower {
	_, n := fake.SentSince(1 << 62)
	f := &follower{fake: fake, want: map[string]chan time.Time{}, stop: make(chan struct{}), done: make(chan struct{})}
	go f.run(n)
	return f
}

func (f *follower) run(n int) {
	defer close(f.done)
	tick := time.NewTicker(500 * time.Microsecond)
	defer tick.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-tick.C:
		}
		var sent []telegramtest.Sent
		sent, n = f.fake.SentSince(n)
		for _, s := range sent {
			for _, m := range replyRe.FindAllStringSubmatch(s.Visible, -1) {
				f.mu.Lock()
				ch, ok := f.want[m[1]]
				delete(f.want, m[1])
				f.mu.Unlock()
				if ok {
					ch <- s.At
				}
			}
		}
	}
}

func (f *follower) expect(token string) chan time.Time {
	ch := make(chan time.Time, 1)
	f.mu.Lock()
	f.want[token] = ch
	f.mu.Unlock()
	return ch
}

func (f *follower) forget(token string) {
	f.mu.Lock()
	delete(f.want, token)
	f.mu.Unlock()
}

func (f *follower) close() { close(f.stop); <-f.done }

// loadResult is one load run.
type loadResult struct {
	Cap, Chats, Msgs int
	Latency          time.Duration
	Elapsed          time.Duration
	Rate             float64 // replies per second
	P50, P99         time.Duration
	Failed           int
}

// chatBase gives every run its own chat ids, so runs never share a session.
var chatBase atomic.Int64

// runChats has each of n chats send m messages on the Telegram fake, one
// after the other (a user waits for the answer before asking again), all
// chats at once; it returns the latencies from the update being queued to
// the final reply text being on the fake.
func runChats(fx *fakes, fol *follower, chats, msgs int, timeout time.Duration) (lat []time.Duration, elapsed time.Duration, failed int) {
	base := chatBase.Add(1) * 1_000_000
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for c := range chats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := base + int64(c)
			user := telegramtest.User{ID: id, Username: fmt.Sprint("u", id), FirstName: "Bench"}
			for j := range msgs {
				token := fmt.Sprintf("m-%d-%d", id, j)
				ch := fol.expect(token)
				t0 := time.Now()
				fx.telegram.Send(telegramtest.Msg{From: user, Chat: telegramtest.Chat{ID: id, Type: "private"}, Text: "question " + token})
				select {
				case at := <-ch:
					mu.Lock()
					lat = append(lat, at.Sub(t0))
					mu.Unlock()
				case <-time.After(timeout):
					fol.forget(token)
					mu.Lock()
					failed++
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return lat, time.Since(start), failed
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p * float64(len(s)-1))
	return s[i]
}

// loadCase is one row to measure.
type loadCase struct {
	chats, msgs int
	latency     time.Duration
}

// measureLoad runs the load matrix against a gateway with 4 channels, at
// a turn cap of 100 and at the default cap.
func measureLoad(r *report, fx *fakes, bin, work string, quick bool) error {
	fx.llm.SetRecording(false)
	defer fx.llm.SetRecording(true)
	defer fx.llm.SetLatency(0)
	type capRuns struct {
		cap   int
		cases []loadCase
	}
	plan := []capRuns{
		{100, []loadCase{{1, 20, 0}, {10, 10, 0}, {100, 5, 0}, {1000, 2, 0},
			{1, 20, 500 * time.Millisecond}, {10, 10, 500 * time.Millisecond}, {100, 5, 500 * time.Millisecond}, {1000, 2, 500 * time.Millisecond}}},
		{0, []loadCase{{100, 5, 500 * time.Millisecond}}},
	}
	if quick {
		plan = []capRuns{{100, []loadCase{{1, 3, 0}, {10, 2, 0}, {10, 2, 50 * time.Millisecond}}}}
	}
	for i, pr := range plan {
		g, _, err := startGateway(bin, filepath.Join(work, fmt.Sprint("load", i)), fx, gwOptions{Channels: true, Cap: pr.cap})
		if err != nil {
			return err
		}
		fol := newFollower(fx.telegram)
		for _, c := range pr.cases {
			fx.llm.SetLatency(c.latency)
			// One message first so connections and the session store are warm.
			runChats(fx, fol, 1, 1, 30*time.Second)
			lat, elapsed, failed := runChats(fx, fol, c.chats, c.msgs, 2*time.Minute)
			cap := pr.cap
			if cap == 0 {
				cap = 8 // agents.defaults.maxConcurrentTurns default
			}
			res := loadResult{Cap: cap, Chats: c.chats, Msgs: c.msgs, Latency: c.latency, Elapsed: elapsed,
				Rate: float64(len(lat)) / elapsed.Seconds(), P50: percentile(lat, 0.5), P99: percentile(lat, 0.99), Failed: failed}
			r.Load = append(r.Load, res)
			fmt.Printf("  cap=%d chats=%d msgs=%d latency=%s: %.1f msg/s p50=%s p99=%s failed=%d\n",
				res.Cap, res.Chats, res.Msgs, res.Latency, res.Rate, res.P50.Round(time.Microsecond*100), res.P99.Round(time.Microsecond*100), failed)
		}
		fol.close()
		rss, _, _ := g.memory()
		r.LoadRSS = max(r.LoadRSS, rss)
		g.stop()
	}
	return nil
}
