package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/channels"
)

// ManagerConfig configures a Manager.
type ManagerConfig struct {
	// Inbox is where every channel delivers (access control and the durable
	// journal wrap the bus behind it).
	Inbox channels.Inbox
	// BackoffMin and BackoffMax bound the restart delay (1 s and 5 min by
	// default); it doubles per consecutive failure, with jitter.
	BackoffMin, BackoffMax time.Duration
	// HealthyAfter resets the backoff once a run lasted this long (1 min).
	HealthyAfter time.Duration
	Log          *slog.Logger
	// Redact, when set, cleans every LastError Health returns (an error
	// may name a URL that carries a key; /api/status shows them to anyone
	// who reaches the port).
	Redact func(string) string
}

// Manager runs one supervised goroutine per channel: when a channel's Run
// returns an error (or panics) it is restarted with exponential backoff and
// jitter; when it returns a FatalError it stays stopped in StateFailed
// until RetryFailed. Health is the one source of truth for channel state
// (/api/status, /metrics, readiness): a channel is never left silently
// stopped. Its methods are safe for concurrent use.
type Manager struct {
	cfg      ManagerConfig
	log      *slog.Logger
	channels []channels.Channel

	mu     sync.Mutex
	health map[string]entry
	retry  chan struct{} // closed by RetryFailed, then replaced
}

// entry is the Manager's own view of a channel.
type entry struct {
	h       channels.Health
	running bool // Run is running: the adapter's own state applies
}

// NewManager returns a manager for chans.
func NewManager(cfg ManagerConfig, chans []channels.Channel) *Manager {
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
	m := &Manager{cfg: cfg, log: log, channels: chans, health: map[string]entry{}, retry: make(chan struct{})}
	for _, c := range chans {
		m.health[c.Name()] = entry{h: channels.Health{State: channels.StateStarting, Since: time.Now()}}
	}
	return m
}

// Channels returns the managed channels.
func (m *Manager) Channels() []channels.Channel { return m.channels }

// Run supervises every channel until ctx ends, then waits for them to stop.
func (m *Manager) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, c := range m.channels {
		wg.Go(func() { m.supervise(ctx, c) })
	}
	wg.Wait()
	return nil
}

func (m *Manager) supervise(ctx context.Context, c channels.Channel) {
	name := c.Name()
	log := m.log.With("channel", name)
	delay := m.cfg.BackoffMin
	restarts := 0
	for {
		m.set(name, entry{h: channels.Health{State: channels.StateConnecting, Since: time.Now(), Restarts: restarts}, running: true})
		start := time.Now()
		err := runSafely(ctx, c, m.cfg.Inbox)
		if ctx.Err() != nil {
			m.set(name, entry{h: channels.Health{State: channels.StateStopped, Since: time.Now(), Restarts: restarts}})
			return
		}
		if err == nil {
			err = errors.New("stopped unexpectedly")
		}
		if channels.IsFatal(err) {
			// Logged once here; the adapter does not log it.
			log.Error("channel failed for good; not restarting until a reload (SIGHUP) or restart", "err", err)
			m.set(name, entry{h: channels.Health{State: channels.StateFailed, LastError: err.Error(), Since: time.Now(), Restarts: restarts}})
			m.mu.Lock()
			retry := m.retry
			m.mu.Unlock()
			select {
			case <-ctx.Done():
				m.set(name, entry{h: channels.Health{State: channels.StateStopped, LastError: err.Error(), Since: time.Now(), Restarts: restarts}})
				return
			case <-retry:
			}
			log.Info("retrying a failed channel")
			restarts++
			delay = m.cfg.BackoffMin
			continue
		}
		if time.Since(start) >= m.cfg.HealthyAfter {
			delay = m.cfg.BackoffMin
		}
		restarts++
		wait := channels.Backoff(1, delay, delay)
		log.Error("channel failed; restarting", "err", err, "in", wait.Round(time.Millisecond), "restarts", restarts)
		m.set(name, entry{h: channels.Health{State: channels.StateReconnecting, LastError: err.Error(), Since: time.Now(), Restarts: restarts}})
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			m.set(name, entry{h: channels.Health{State: channels.StateStopped, LastError: err.Error(), Since: time.Now(), Restarts: restarts}})
			return
		case <-t.C:
		}
		delay = min(delay*2, m.cfg.BackoffMax)
	}
}

// RetryFailed starts every channel that stopped with a FatalError again
// (the gateway calls it on SIGHUP, after the user fixed the cause) and
// reports how many there were.
func (m *Manager) RetryFailed() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.health {
		if e.h.State == channels.StateFailed {
			n++
		}
	}
	close(m.retry)
	m.retry = make(chan struct{})
	return n
}

// runSafely runs the channel, turning a panic into an error.
func runSafely(ctx context.Context, c channels.Channel, in channels.Inbox) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return c.Run(ctx, in)
}

func (m *Manager) set(name string, e entry) {
	m.mu.Lock()
	m.health[name] = e
	m.mu.Unlock()
}

// Health returns every channel's state, read at call time. While a
// channel's Run runs, a HealthReporter's own state applies (connecting
// until the platform confirmed, connected, reconnecting); a channel without
// one counts as connected while Run runs.
func (m *Manager) Health() map[string]channels.Health {
	m.mu.Lock()
	out := make(map[string]channels.Health, len(m.health))
	running := make(map[string]bool, len(m.health))
	for k, e := range m.health {
		out[k] = e.h
		running[k] = e.running
	}
	m.mu.Unlock()
	for _, c := range m.channels {
		name := c.Name()
		h := out[name]
		if !running[name] {
			continue
		}
		hr, ok := c.(channels.HealthReporter)
		if !ok {
			h.State = channels.StateConnected
			out[name] = h
			continue
		}
		own := hr.Health()
		switch own.State {
		case channels.StateConnecting, channels.StateConnected, channels.StateReconnecting:
			own.Restarts = h.Restarts
			out[name] = own
		default:
			// Left over from a previous Run, or Run has not reported yet.
			h.State = channels.StateConnecting
			out[name] = h
		}
	}
	if m.cfg.Redact != nil {
		for name, h := range out {
			if h.LastError != "" {
				h.LastError = m.cfg.Redact(h.LastError)
				out[name] = h
			}
		}
	}
	return out
}

// Ready reports whether every channel is connected, and lists those that
// are not.
func (m *Manager) Ready() (bool, []string) {
	var bad []string
	for name, h := range m.Health() {
		if h.State != channels.StateConnected {
			bad = append(bad, name+": "+string(h.State))
		}
	}
	sort.Strings(bad)
	return len(bad) == 0, bad
}
