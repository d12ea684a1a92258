package reqbody

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them: a test
// server's connection left hanging by a deadline that never fired shows
// up here.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
