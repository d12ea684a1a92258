package browser

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them: Close
// must stop Chromium, the proxy and every interceptor.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
