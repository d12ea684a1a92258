package channels

import (
	"context"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	lo, hi := 100*time.Millisecond, time.Second
	for n, want := range map[int]time.Duration{1: lo, 2: 2 * lo, 3: 4 * lo, 4: 8 * lo, 5: hi, 50: hi} {
		for range 20 {
			if d := Backoff(n, lo, hi); d < want/2 || d > want {
				t.Fatalf("Backoff(%d) = %s, want within [%s, %s]", n, d, want/2, want)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := SleepBackoff(ctx, 1, time.Hour, time.Hour); err == nil {
		t.Error("SleepBackoff ignored a cancelled context")
	}
}
