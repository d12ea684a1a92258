package stt_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them: a
// request or a poll must end with its context.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
