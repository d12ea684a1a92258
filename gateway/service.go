package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// service is one part of the running gateway. The gateway starts its
// services in order and stops them in reverse; when one fails to start,
// the ones already started are stopped.
type service struct {
	name string
	// start is a step that must succeed before the next service starts
	// (optional).
	start func(ctx context.Context) error
	// run blocks until its context ends (optional). Returning earlier is a
	// failure that stops the gateway.
	run func(ctx context.Context) error
	// drain is called on shutdown before run's context is cancelled, to
	// let work in flight finish; it bounds its own wait (optional).
	drain func()
}

// services runs a list of services. It is used by one goroutine.
type services struct {
	log     *slog.Logger
	started []*runningService
	// failed receives the error of a service whose run returned before it
	// was stopped.
	failed chan error
}

type runningService struct {
	service
	cancel context.CancelFunc
	done   chan struct{}
}

func newServices(log *slog.Logger) *services {
	return &services{log: log, failed: make(chan error, 16)}
}

// start starts svcs in order. On a failure it stops what it started and
// returns the error.
func (s *services) start(ctx context.Context, svcs []service) error {
	for _, svc := range svcs {
		if svc.start != nil {
			if err := svc.start(ctx); err != nil {
				s.stop()
				return fmt.Errorf("gateway: start %s: %w", svc.name, err)
			}
		}
		r := &runningService{service: svc, done: make(chan struct{})}
		if svc.run == nil {
			close(r.done)
		} else {
			// Services outlive ctx: stop ends them, in order.
			rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
			r.cancel = cancel
			go func() {
				defer close(r.done)
				err := svc.run(rctx)
				if rctx.Err() != nil {
					return
				}
				if err == nil {
					err = errors.New("stopped unexpectedly")
				}
				s.failed <- fmt.Errorf("gateway: %s: %w", svc.name, err)
			}()
		}
		s.started = append(s.started, r)
	}
	return nil
}

// stop stops the started services in reverse order: drain, cancel, wait.
func (s *services) stop() {
	for i := len(s.started) - 1; i >= 0; i-- {
		r := s.started[i]
		if r.drain != nil {
			r.drain()
		}
		if r.cancel != nil {
			r.cancel()
		}
		<-r.done
		s.log.Debug("stopped", "service", r.name)
	}
	s.started = nil
}
