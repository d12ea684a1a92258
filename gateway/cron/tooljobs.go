package cron

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	crontool "github.com/nanobot-go/nanobot/tools/cron"
)

// ForTool returns the store as the agent's cron tool sees it (the
// tools/cron.Jobs interface): schedules are validated and first runs
// computed here, where the Job model lives.
func (s *Store) ForTool() crontool.Jobs { return toolJobs{s} }

type toolJobs struct{ s *Store }

func (t toolJobs) Add(ctx context.Context, spec crontool.Spec) (crontool.Listed, error) {
	var sched Schedule
	switch {
	case !spec.At.IsZero():
		sched = Schedule{Kind: KindAt, AtMs: ms(spec.At)}
	case spec.CronExpr != "":
		sched = Schedule{Kind: KindCron, Expr: spec.CronExpr, TZ: spec.TZ}
	default:
		sched = Schedule{Kind: KindEvery, EveryMs: spec.Every.Milliseconds()}
	}
	if err := sched.Validate(); err != nil {
		return crontool.Listed{}, err
	}
	now := time.Now()
	next, ok := sched.Next(now, now)
	if !ok {
		return crontool.Listed{}, errors.New("that schedule never runs")
	}
	j := Job{
		ID: newID(), Name: spec.Name, Enabled: true, Schedule: sched,
		Payload:     Payload{Kind: "agent_turn", Message: spec.Message, Deliver: true, Channel: spec.Channel, To: spec.ChatID, SessionKey: spec.SessionKey},
		CreatedAtMs: ms(now), UpdatedAtMs: ms(now), DeleteAfterRun: sched.Kind == KindAt,
		State: State{NextRunAtMs: ms(next)},
	}
	if err := t.s.Add(ctx, j); err != nil {
		return crontool.Listed{}, err
	}
	return listed(j), nil
}

func (t toolJobs) List(ctx context.Context, session string) ([]crontool.Listed, error) {
	jobs, err := t.s.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	var out []crontool.Listed
	for _, j := range jobs {
		if session == "" || j.Session() == session {
			out = append(out, listed(j))
		}
	}
	return out, nil
}

func (t toolJobs) Remove(ctx context.Context, id, session string) error {
	return t.s.Remove(ctx, id, session)
}

func listed(j Job) crontool.Listed {
	l := crontool.Listed{ID: j.ID, Name: j.Name, Schedule: j.Schedule.Describe(), Message: j.Payload.Message}
	if j.State.NextRunAtMs > 0 {
		l.Next = fromMs(j.State.NextRunAtMs)
	}
	return l
}

func newID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
