package memprof

import (
	"runtime"
	"testing"
)

func TestOffUntilEnabled(t *testing.T) {
	if got := runtime.MemProfileRate; got != 0 {
		t.Fatalf("MemProfileRate after init = %d, want 0", got)
	}
	Enable()
	if got := runtime.MemProfileRate; got != defaultRate {
		t.Fatalf("MemProfileRate after Enable = %d, want %d", got, defaultRate)
	}
	Enable()
	if got := runtime.MemProfileRate; got != defaultRate {
		t.Fatalf("MemProfileRate after a second Enable = %d, want %d", got, defaultRate)
	}
}
