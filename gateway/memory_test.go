package gateway

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/waitfor"
)

func TestReleaseOncePerBusySpell(t *testing.T) {
	var idle atomic.Bool
	var released, sawBusy, probes atomic.Int32
	idle.Store(true)
	probe := func() bool {
		probes.Add(1)
		v := idle.Load()
		if !v {
			sawBusy.Add(1)
		}
		return v
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { whenIdle(ctx, probe, 30*time.Millisecond, func() { released.Add(1) }); close(done) }()
	defer func() { cancel(); <-done }()

	// Starting up counts as a busy spell: one release once idle, then none
	// while the gateway stays idle.
	waitfor.True(t, "release after start-up", func() bool { return released.Load() == 1 })
	waitMoreProbes(t, &probes)
	if n := released.Load(); n != 1 {
		t.Fatalf("released %d times without any work", n)
	}
	for spell := 2; spell <= 3; spell++ {
		sawBusy.Store(0)
		idle.Store(false)
		waitfor.True(t, "the busy spell to be seen", func() bool { return sawBusy.Load() > 0 })
		idle.Store(true)
		waitfor.True(t, "release after the busy spell", func() bool { return released.Load() == int32(spell) })
		// Staying idle does not release again.
		waitMoreProbes(t, &probes)
		if n := released.Load(); n != int32(spell) {
			t.Fatalf("spell %d: released %d times", spell, n)
		}
	}
}

// waitMoreProbes waits until the idle probe has run 20 more times. whenIdle
// probes every after/6, so that spans more than three times the quiet time
// a release needs: a wrong release would have happened by then.
func waitMoreProbes(t *testing.T, probes *atomic.Int32) {
	t.Helper()
	from := probes.Load()
	waitfor.True(t, "20 more idle checks", func() bool { return probes.Load() >= from+20 })
}

// TestReleaseAfterStart releases once, at the first check that finds the
// agent idle after the wait, and not again however long it stays idle; a
// gateway stopped before then never releases.
func TestReleaseAfterStart(t *testing.T) {
	var idle atomic.Bool
	var released, probes atomic.Int32
	probe := func() bool { probes.Add(1); return idle.Load() }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { afterStart(ctx, 30*time.Millisecond, probe, func() { released.Add(1) }); close(done) }()
	defer func() { cancel(); <-done }()

	waitMoreProbes(t, &probes) // busy: checked again and again, no release
	if n := released.Load(); n != 0 {
		t.Fatalf("released %d times while busy", n)
	}
	idle.Store(true)
	waitfor.True(t, "release once idle", func() bool { return released.Load() == 1 })
	select {
	case <-done: // returned: it cannot release again
	case <-time.After(10 * time.Second):
		t.Fatal("afterStart still running after its release")
	}

	stopped, cancelStopped := context.WithCancel(context.Background())
	cancelStopped()
	afterStart(stopped, time.Hour, func() bool { return true }, func() { t.Error("released after the gateway stopped") })
}
