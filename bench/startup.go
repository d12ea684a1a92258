package main

import (
	"context"
	"log"
	"path/filepath"
	"sort"
	"time"
)

// measureStartup starts the gateway with 4 channels several times (the
// first start also writes the workspace), then lets the last one idle and
// reads its memory.
func measureStartup(r *report, fx *fakes, bin, work string, idle time.Duration) error {
	dir := filepath.Join(work, "startup")
	runs := 6
	var times []time.Duration
	var g *gateway
	for i := range runs {
		var took time.Duration
		var err error
		g, took, err = startGateway(bin, dir, fx, gwOptions{Channels: true})
		if err != nil {
			return err
		}
		if i == 0 {
			r.FirstReady = took
		} else {
			times = append(times, took)
		}
		if i < runs-1 {
			g.stop()
		}
	}
	defer g.stop()
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	r.ReadyMedian, r.ReadyMax = times[len(times)/2], times[len(times)-1]

	time.Sleep(idle)
	r.IdleFor = idle
	m, err := g.smaps()
	if err != nil {
		return err
	}
	r.IdleRSS, r.IdlePSS, r.IdleAnon = m["Rss:"], m["Pss:"], m["Anonymous:"]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if v, err := g.metric(ctx, "go_memstats_heap_inuse_bytes"); err == nil {
		r.IdleHeap = int64(v)
	}
	log.Printf("  ready median %s; idle RSS %.1f MB (anonymous %.1f MB), heap %.1f MB",
		r.ReadyMedian.Round(time.Millisecond), float64(r.IdleRSS)/1e6, float64(r.IdleAnon)/1e6, float64(r.IdleHeap)/1e6)
	return nil
}
