package bus_test

import (
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/bus/bustest"
)

// The in-memory bus passes the suite natsbus passes too.
func TestConformance(t *testing.T) {
	bustest.Run(t, bustest.Impl{New: func(t *testing.T) bustest.Queue {
		b := bus.New(0, 0)
		t.Cleanup(b.Close)
		return b
	}})
}
