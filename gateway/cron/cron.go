// Package cron owns scheduled jobs: the Job model, the Store (jobs.json,
// file-locked with atomic writes in the layout the Python nanobot writes, or
// a NATS key-value entry in cluster mode), next-run computation for the
// kinds at / every / cron (with IANA timezone), and the Service that fires
// due jobs by sending each job's message through the agent loop into the
// job's session, so the reply reaches the job's chat. The agent's `cron`
// tool (tools/cron) reaches the store through Store.ForTool.
//
// Concurrency: a Store is safe for concurrent use, and several Stores (in one
// process, several processes or several machines) may share one jobs
// document. Store methods that do IO take a ctx first; a KV store gives up
// its retries when ctx ends.
//
// Rules:
//   - A job's next run is saved before its message is sent, so a crash
//     right after firing never fires it twice: runs are at most once. The
//     run's status is "firing" until the publish returned, then "ok" or
//     "error" (settle).
//   - Missed runs (the gateway was down) are coalesced: a recurring job
//     that is overdue fires once, then follows its schedule from now. A
//     one-off job fires late if it is less than MaxLateness overdue;
//     otherwise it is marked "missed" and disabled, never fired a day late.
//   - A job removed (by the agent or `nanobot cron remove`) never fires
//     again: the store is re-read before every firing.
package cron

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/nanobot-go/nanobot/bus"
)

// MaxLateness is how late a one-off job may still fire.
const MaxLateness = 24 * time.Hour

// recheck bounds how long the service sleeps, so changes made by another
// process (the CLI) are seen.
const recheck = 30 * time.Second

// Service fires due jobs.
type Service struct {
	store   *Store
	publish func(ctx context.Context, m bus.Inbound) error
	log     *slog.Logger
}

// New returns a service over store; publish hands a job's message to the
// agent (the bus's PublishInbound).
func New(store *Store, publish func(context.Context, bus.Inbound) error, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{store: store, publish: publish, log: log.With("component", "cron")}
}

// Run fires jobs until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	for {
		next, err := s.fireDue(ctx)
		if err != nil && ctx.Err() == nil { // cut short by the shutdown: no failure
			s.log.Error("cron pass failed", "err", err)
		}
		wait := recheck
		if !next.IsZero() {
			wait = min(max(time.Until(next), 0), recheck)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-s.store.Changed():
			t.Stop()
		case <-t.C:
		}
	}
}

// fireDue fires every due job and returns the earliest next run.
func (s *Service) fireDue(ctx context.Context) (time.Time, error) {
	now := time.Now()
	var fire []Job
	var earliest time.Time
	err := s.store.UpdateQuiet(ctx, func(list []Job) ([]Job, error) {
		out := list[:0]
		for _, j := range list {
			if !j.Enabled {
				out = append(out, j)
				continue
			}
			if j.State.NextRunAtMs == 0 {
				if next, ok := j.Schedule.Next(now, time.UnixMilli(j.CreatedAtMs)); ok {
					j.State.NextRunAtMs = next.UnixMilli()
				} else {
					j.Enabled = false
				}
			}
			due := time.UnixMilli(j.State.NextRunAtMs)
			if j.Enabled && !due.After(now) {
				late := now.Sub(due)
				if j.Schedule.Kind == KindAt && late > MaxLateness {
					j.Enabled = false
					j.State.LastStatus = StatusMissed
					j.State.LastError = fmt.Sprintf("the gateway was not running at %s", due.Format(time.RFC3339))
					s.log.Warn("one-off job missed", "job", j.ID, "due", due)
					out = append(out, j)
					continue
				}
				j.State.LastRunAtMs = now.UnixMilli()
				j.State.LastStatus, j.State.LastError = StatusFiring, ""
				j.UpdatedAtMs = now.UnixMilli()
				fire = append(fire, j)
				if next, ok := j.Schedule.Next(now, time.UnixMilli(j.CreatedAtMs)); ok && j.Schedule.Kind != KindAt {
					j.State.NextRunAtMs = next.UnixMilli()
				} else {
					j.Enabled = false
					j.State.NextRunAtMs = 0
					if j.DeleteAfterRun {
						continue
					}
				}
			}
			if j.Enabled && (earliest.IsZero() || time.UnixMilli(j.State.NextRunAtMs).Before(earliest)) {
				earliest = time.UnixMilli(j.State.NextRunAtMs)
			}
			out = append(out, j)
		}
		return slices.Clip(out), nil
	})
	if err != nil {
		return time.Time{}, err
	}
	for _, j := range fire {
		s.log.Info("job fired", "job", j.ID, "name", j.Name, "session", j.Session())
		m := bus.Inbound{
			Channel: j.Payload.Channel, ChatID: j.Payload.To, SenderID: "cron",
			Content:    fmt.Sprintf("[Scheduled task %q (job %s) is due now. Do it and reply to the user.]\n%s", j.Name, j.ID, j.Payload.Message),
			MessageID:  fmt.Sprintf("cron:%s:%d", j.ID, j.State.LastRunAtMs),
			SessionKey: j.Payload.SessionKey,
			Source:     bus.SourceCron,
			SourceRef:  j.ID,
			ReceivedAt: now,
		}
		err := s.publish(ctx, m)
		if err != nil {
			s.log.Error("delivering job failed; this run is lost (cron runs are at most once)", "job", j.ID, "err", err)
		}
		s.settle(ctx, j, err)
	}
	return earliest, nil
}

// Run statuses (Job.State.LastStatus).
const (
	// StatusFiring: the run's next time is saved and its message is being
	// handed to the agent; a crash here leaves it (the run is lost).
	StatusFiring = "firing"
	// StatusOK: the agent's inbox took the run's message.
	StatusOK = "ok"
	// StatusError: the message could not be handed over (LastError says
	// why); the run is not retried.
	StatusError = "error"
	// StatusMissed: a one-off job more than MaxLateness overdue.
	StatusMissed = "missed"
)

// settle records how handing j's run over went, on the job as it is now
// (it may have been edited meanwhile); a job removed or fired again since
// is left alone.
func (s *Service) settle(ctx context.Context, j Job, perr error) {
	err := s.store.UpdateQuiet(context.WithoutCancel(ctx), func(list []Job) ([]Job, error) {
		for i := range list {
			if list[i].ID != j.ID || list[i].State.LastRunAtMs != j.State.LastRunAtMs {
				continue
			}
			list[i].State.LastStatus, list[i].State.LastError = StatusOK, ""
			if perr != nil {
				list[i].State.LastStatus, list[i].State.LastError = StatusError, perr.Error()
			}
		}
		return list, nil
	})
	if err != nil {
		s.log.Warn("recording a job's status failed", "job", j.ID, "err", err)
	}
}
