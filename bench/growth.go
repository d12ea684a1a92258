package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// growthTurns is set by -growth-turns.
var growthTurns = 6

// profiles is set by -profiles: a folder for heap profiles taken at each
// memory reading of the growth run.
var profiles string

// growthPoint is the gateway's memory after some sessions.
type growthPoint struct {
	Label          string
	Sessions       int
	RSS, PSS, Heap int64
}

// measureGrowth drives 1,000 then 10,000 sessions of 20 turns each through
// one gateway and reads its memory after each step and after idling.
func measureGrowth(r *report, fx *fakes, bin, work string, quick bool) error {
	fx.llm.SetRecording(false)
	defer fx.llm.SetRecording(true)
	first, total, turns, settle := 1000, 10000, growthTurns, 45*time.Second
	if quick {
		first, total, turns, settle = 20, 60, 3, time.Second
	}
	r.GrowthTurns = turns
	dir := filepath.Join(work, "growth")
	g, _, err := startGateway(bin, dir, fx, gwOptions{Channels: true, Cap: 100})
	if err != nil {
		return err
	}
	defer g.stop()
	fol := newFollower(fx.telegram)
	defer fol.close()
	read := func(label string, sessions int) error {
		sm, err := g.smaps()
		if err != nil {
			return err
		}
		rss, pss := sm["Rss:"], sm["Pss:"]
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		heap, _ := g.metric(ctx, "go_memstats_heap_inuse_bytes")
		if profiles != "" {
			name := fmt.Sprintf("heap-%05d-%s.pb.gz", sessions, strings.ReplaceAll(label, " ", "-"))
			if err := g.saveHeap(ctx, filepath.Join(profiles, name)); err != nil {
				fmt.Printf("  heap profile: %v\n", err)
			}
		}
		p := growthPoint{Label: label, Sessions: sessions, RSS: rss, PSS: pss, Heap: int64(heap)}
		r.Growth = append(r.Growth, p)
		fmt.Printf("  %s: %d sessions, RSS %s (anonymous %s), heap %s\n", label, sessions, mib(rss), mib(sm["Anonymous:"]), mib(int64(heap)))
		printRuntime(ctx, g)
		return nil
	}
	if err := read("before", 0); err != nil {
		return err
	}
	start := time.Now()
	_, _, failed := runChats(fx, fol, first, turns, 5*time.Minute)
	if err := read("after load", first); err != nil {
		return err
	}
	time.Sleep(settle)
	if err := read(fmt.Sprintf("after %s idle", settle), first); err != nil {
		return err
	}
	// The next sessions come in waves as large as the first, so both
	// readings follow the same peak of concurrent chats and any difference
	// is what the sessions seen before left behind.
	r.GrowthFailed = failed
	for done := first; done < total; done += first {
		_, _, f := runChats(fx, fol, min(first, total-done), turns, 5*time.Minute)
		r.GrowthFailed += f
	}
	if err := read("after load", total); err != nil {
		return err
	}
	time.Sleep(settle)
	if err := read(fmt.Sprintf("after %s idle", settle), total); err != nil {
		return err
	}
	r.GrowthTook = time.Since(start)
	files, _ := filepath.Glob(filepath.Join(dir, "sessions", "*"))
	r.GrowthFiles = len(files)
	if len(files) == 0 {
		if _, err := os.Stat(filepath.Join(dir, "sessions")); err != nil {
			r.GrowthFiles = -1
		}
	}
	return nil
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// printRuntime prints what the Go runtime holds outside the heap's objects,
// to tell growth of our state from the runtime's own: goroutine stacks,
// span structures and GC metadata (never returned), and the goroutines.
func printRuntime(ctx context.Context, g *gateway) {
	var parts []string
	for _, m := range []struct{ name, label string }{
		{"go_memstats_stack_inuse_bytes", "stacks"},
		{"go_memstats_mspan_inuse_bytes", "spans"},
		{"go_memstats_gc_sys_bytes", "GC metadata"},
		{"go_memstats_heap_idle_bytes", "heap idle"},
		{"go_memstats_heap_released_bytes", "released"},
	} {
		if v, err := g.metric(ctx, m.name); err == nil {
			parts = append(parts, m.label+" "+mib(int64(v)))
		}
	}
	if v, err := g.metric(ctx, "go_goroutines"); err == nil {
		parts = append(parts, fmt.Sprintf("%d goroutines", int(v)))
	}
	fmt.Printf("    runtime: %s\n", strings.Join(parts, ", "))
}
