// Package pathguardtest reproduces the symlink race that a path check
// followed by a second open by name loses: a goroutine that keeps
// exchanging a real folder with a symlink, as a confined command could do
// inside the workspace.
package pathguardtest

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// Swapper exchanges two names in a loop until Stop.
type Swapper struct {
	dir, link string
	stop      chan struct{}
	done      sync.WaitGroup
	once      sync.Once
	swaps     atomic.Int64
	err       error
}

// Swap makes link a symlink to target and starts exchanging dir and link
// with renameat2(RENAME_EXCHANGE): at every instant one of the two names is
// the real folder and the other the symlink, so a path below dir resolves
// inside the workspace at one moment and into target the next. It waits
// for the first exchange before it returns, and t.Cleanup stops it.
func Swap(t *testing.T, dir, link, target string) *Swapper {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	s := &Swapper{dir: dir, link: link, stop: make(chan struct{})}
	started := make(chan struct{})
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		first := true
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
				s.err = err
				if first {
					close(started)
				}
				return
			}
			s.swaps.Add(1)
			if first {
				first = false
				close(started)
			}
		}
	}()
	<-started
	if s.err != nil { // the goroutine has ended
		if errors.Is(s.err, unix.EINVAL) || errors.Is(s.err, unix.ENOSYS) {
			t.Skipf("renameat2(RENAME_EXCHANGE) is not supported here: %v", s.err)
		}
		t.Fatalf("renameat2 %s <-> %s: %v", filepath.Base(dir), filepath.Base(link), s.err)
	}
	t.Cleanup(func() { s.Stop(t) })
	return s
}

// Stop ends the loop (once) and leaves dir as the real folder again. It
// returns how many exchanges happened.
func (s *Swapper) Stop(t *testing.T) int64 {
	t.Helper()
	s.once.Do(func() {
		close(s.stop)
		s.done.Wait()
		if s.err != nil {
			t.Errorf("swapper: %v", s.err)
			return
		}
		if s.swaps.Load()%2 == 1 {
			if err := unix.Renameat2(unix.AT_FDCWD, s.dir, unix.AT_FDCWD, s.link, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("swapper: restore: %v", err)
			}
		}
	})
	return s.swaps.Load()
}
