package waitfor

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestTrueReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	True(t, "three checks", func() bool { return n.Add(1) == 3 })
	if n.Load() != 3 {
		t.Errorf("checked %d times, want 3", n.Load())
	}
}

// fatalRecorder records Fatalf instead of ending the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = format
}

func TestWithinFailsAfterTheDeadline(t *testing.T) {
	r := &fatalRecorder{TB: t}
	start := time.Now()
	calls := 0
	Within(r, "never", 30*time.Millisecond, func() bool { calls++; return r.msg != "" })
	if r.msg != "timed out waiting for %s" || time.Since(start) < 30*time.Millisecond {
		t.Errorf("Fatalf %q after %v", r.msg, time.Since(start))
	}
}
