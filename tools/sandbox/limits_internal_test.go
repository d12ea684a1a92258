//go:build linux

package sandbox

import (
	"os"
	"runtime"
	"testing"
)

func TestCountUserTasks(t *testing.T) {
	// This test process alone has several threads; start one more that
	// stays while counting.
	stop := make(chan struct{})
	started := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		close(started)
		<-stop
	}()
	<-started
	defer close(stop)
	if n := countUserTasks(os.Getuid()); n < 2 {
		t.Errorf("countUserTasks(own uid) = %d, want at least this process's threads", n)
	}
	if n := countUserTasks(-5); n != 0 {
		t.Errorf("countUserTasks(no such uid) = %d, want 0", n)
	}
}
