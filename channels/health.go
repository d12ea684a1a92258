package channels

import (
	"sync"
	"time"
)

// HealthState is the connection state an adapter reports through
// HealthReporter. The zero value is ready to use and safe for concurrent
// use.
type HealthState struct {
	mu sync.Mutex
	h  Health
}

// Get returns the current state; before the first Set it is StateStarting.
func (s *HealthState) Get() Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h.State == "" {
		return Health{State: StateStarting}
	}
	return s.h
}

// Set records a state. lastErr ("" keeps the previous one) must already be
// free of credentials; connecting and connected clear it. Since moves only when the state
// or the error changes.
func (s *HealthState) Set(state State, lastErr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := s.h.LastError
	if lastErr != "" {
		last = lastErr
	}
	if state == StateConnected || state == StateConnecting {
		last = ""
	}
	if s.h.State != state || s.h.LastError != last {
		s.h = Health{State: state, LastError: last, Since: time.Now(), Restarts: s.h.Restarts}
	}
}
