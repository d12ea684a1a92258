package natsbus

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them: the
// long-running loops here must stop when their context ends.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
