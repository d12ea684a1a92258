package gateway

import (
	"fmt"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
)

// BenchmarkClusterThroughput measures answered messages per second with 1,
// 2 and 4 workers (each capped at 4 concurrent turns) behind one channels
// instance, against a scripted model that takes 50 ms per turn. With the
// model as the bottleneck, throughput should grow with the workers. Figures
// are in docs/benchmarks.md.
func BenchmarkClusterThroughput(b *testing.B) {
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprint("workers=", workers), func(b *testing.B) {
			c := newCluster(b)
			cfg := c.config()
			cfg.Agents.Defaults.MaxConcurrentTurns = 4
			cfg.Cluster.LeaseTTLS = 2
			llm := newProbe(50 * time.Millisecond)
			fc := platform("fake")
			start := func(role, name string, extra ...*fakeChannel) *running {
				if len(extra) > 0 {
					return startGatewayOpts(b, cfg, llm.worker(name), func(o *Options) { o.Role, o.Instance = role, name }, extra[0])
				}
				return startGatewayOpts(b, cfg, llm.worker(name), func(o *Options) { o.Role, o.Instance = role, name })
			}
			start(RoleChannels, "channels", fc)
			for i := range workers {
				start(RoleWorker, fmt.Sprint("worker-", i+1))
			}
			// Let the workers share out the partitions before measuring.
			time.Sleep(3 * time.Duration(cfg.Cluster.LeaseTTLS) * time.Second)
			const sessions = 64
			sent := 0
			answered := func() int {
				n := 0
				for s := range sessions {
					n += len(fc.texts(fmt.Sprint("s", s)))
				}
				return n
			}
			b.ResetTimer()
			begin := time.Now()
			for i := range b.N {
				s := i % sessions
				fc.in <- bus.Inbound{Channel: "fake", ChatID: fmt.Sprint("s", s), SenderID: "u", Content: fmt.Sprintf("s%d %d", s, i/sessions), MessageID: fmt.Sprint(i)}
				sent++
			}
			deadline := time.Now().Add(5 * time.Minute)
			for answered() < sent {
				if time.Now().After(deadline) {
					b.Fatalf("%d of %d answered", answered(), sent)
				}
				time.Sleep(5 * time.Millisecond)
			}
			b.StopTimer()
			b.ReportMetric(float64(sent)/time.Since(begin).Seconds(), "msgs/s")
		})
	}
}
