package channels

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"
)

// HealthObserver is told about every channel state change (for metrics).
type HealthObserver interface {
	ChannelState(channel string, h Health)
}

// ManagerConfig configures a Manager.
type ManagerConfig struct {
	// Inbox is where every channel delivers (access control and the durable
	// journal wrap the bus behind it).
	Inbox Inbox
	// BackoffMin and BackoffMax bound the restart delay (1 s and 5 min by
	// default); it doubles per consecutive failure, with jitter.
	BackoffMin, BackoffMax time.Duration
	// HealthyAfter resets the backoff once a run lasted this long (1 min).
	HealthyAfter time.Duration
	Observer     HealthObserver
	Log          *slog.Logger
}

// Manager runs one supervised goroutine per channel: when a channel's Run
// returns an error (or panics) it is restarted with exponential backoff and
// jitter, and its state is visible through Health. A channel is never left
// silently stopped.
type Manager struct {
	cfg      ManagerConfig
	log      *slog.Logger
	channels []Channel

	mu     sync.Mutex
	health map[string]Health
}

// NewManager returns a manager for chans.
func NewManager(cfg ManagerConfig, chans []Channel) *Manager {
	if cfg.BackoffMin <= 0 {
		cfg.BackoffMin = time.Second
	}
	if cfg.BackoffMax <= 0 {
		cfg.BackoffMax = 5 * time.Minute
	}
	if cfg.HealthyAfter <= 0 {
		cfg.HealthyAfter = time.Minute
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{cfg: cfg, log: log, channels: chans, health: map[string]Health{}}
	for _, c := range chans {
		m.health[c.Name()] = Health{State: StateStarting, Since: time.Now()}
	}
	return m
}

// Channels returns the managed channels.
func (m *Manager) Channels() []Channel { return m.channels }

// Run supervises every channel until ctx ends, then waits for them to stop.
func (m *Manager) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, c := range m.channels {
		wg.Go(func() { m.supervise(ctx, c) })
	}
	wg.Wait()
	return nil
}

func (m *Manager) supervise(ctx context.Context, c Channel) {
	log := m.log.With("channel", c.Name())
	delay := m.cfg.BackoffMin
	restarts := 0
	for {
		m.set(c.Name(), Health{State: StateConnected, Since: time.Now(), Restarts: restarts})
		start := time.Now()
		err := runSafely(ctx, c, m.cfg.Inbox)
		if ctx.Err() != nil {
			m.set(c.Name(), Health{State: StateStopped, Since: time.Now(), Restarts: restarts})
			return
		}
		if err == nil {
			err = errors.New("stopped unexpectedly")
		}
		if time.Since(start) >= m.cfg.HealthyAfter {
			delay = m.cfg.BackoffMin
		}
		restarts++
		wait := Backoff(1, delay, delay)
		log.Error("channel failed; restarting", "err", err, "in", wait.Round(time.Millisecond), "restarts", restarts)
		m.set(c.Name(), Health{State: StateReconnecting, LastError: err.Error(), Since: time.Now(), Restarts: restarts})
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			m.set(c.Name(), Health{State: StateStopped, LastError: err.Error(), Since: time.Now(), Restarts: restarts})
			return
		case <-t.C:
		}
		delay = min(delay*2, m.cfg.BackoffMax)
	}
}

// runSafely runs the channel, turning a panic into an error.
func runSafely(ctx context.Context, c Channel, in Inbox) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return c.Run(ctx, in)
}

func (m *Manager) set(name string, h Health) {
	m.mu.Lock()
	m.health[name] = h
	m.mu.Unlock()
	if m.cfg.Observer != nil {
		m.cfg.Observer.ChannelState(name, m.Health()[name])
	}
}

// Health returns every channel's state. A channel that reports its own
// health (HealthReporter) overrides "connected" while it runs.
func (m *Manager) Health() map[string]Health {
	m.mu.Lock()
	out := make(map[string]Health, len(m.health))
	for k, v := range m.health {
		out[k] = v
	}
	m.mu.Unlock()
	for _, c := range m.channels {
		h := out[c.Name()]
		if hr, ok := c.(HealthReporter); ok && h.State == StateConnected {
			own := hr.Health()
			own.Restarts = h.Restarts
			if own.State == "" {
				own.State = StateConnected
			}
			out[c.Name()] = own
		}
	}
	return out
}

// Ready reports whether every channel is connected, and lists those that
// are not.
func (m *Manager) Ready() (bool, []string) {
	var bad []string
	for name, h := range m.Health() {
		if h.State != StateConnected {
			bad = append(bad, name+": "+string(h.State))
		}
	}
	sort.Strings(bad)
	return len(bad) == 0, bad
}
