package cron

import (
	"fmt"
	"time"

	rcron "github.com/robfig/cron/v3"
)

var parser = rcron.NewParser(rcron.Minute | rcron.Hour | rcron.Dom | rcron.Month | rcron.Dow | rcron.Descriptor)

// Validate checks a schedule and returns a readable error for the model.
func (s Schedule) Validate() error {
	switch s.Kind {
	case KindAt:
		if s.AtMs <= 0 {
			return fmt.Errorf("an 'at' schedule needs a time")
		}
	case KindEvery:
		if s.EveryMs < 60_000 {
			return fmt.Errorf("an 'every' interval must be at least 60 seconds, got %d ms", s.EveryMs)
		}
	case KindCron:
		if _, err := parser.Parse(s.Expr); err != nil {
			return fmt.Errorf("cron expression %q: %v (use 5 fields: minute hour day month weekday)", s.Expr, err)
		}
		if _, err := s.location(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown schedule kind %q (want at, every or cron)", s.Kind)
	}
	return nil
}

func (s Schedule) location() (*time.Location, error) {
	if s.TZ == "" {
		return time.Local, nil
	}
	loc, err := time.LoadLocation(s.TZ)
	if err != nil {
		return nil, fmt.Errorf("unknown timezone %q", s.TZ)
	}
	return loc, nil
}

// Next returns the first run time strictly after after, and false when the
// schedule will not run again. anchor is the job's creation time (intervals
// count from it).
func (s Schedule) Next(after, anchor time.Time) (time.Time, bool) {
	switch s.Kind {
	case KindAt:
		at := fromMs(s.AtMs)
		return at, at.After(after)
	case KindEvery:
		every := time.Duration(s.EveryMs) * time.Millisecond
		if every <= 0 {
			return time.Time{}, false
		}
		if anchor.After(after) {
			return anchor, true
		}
		n := after.Sub(anchor)/every + 1
		return anchor.Add(n * every), true
	case KindCron:
		sched, err := parser.Parse(s.Expr)
		if err != nil {
			return time.Time{}, false
		}
		loc, err := s.location()
		if err != nil {
			return time.Time{}, false
		}
		next := sched.Next(after.In(loc))
		return next, !next.IsZero()
	}
	return time.Time{}, false
}

// Describe renders a schedule for people and the model.
func (s Schedule) Describe() string {
	switch s.Kind {
	case KindAt:
		return "once at " + fromMs(s.AtMs).Format(time.RFC3339)
	case KindEvery:
		return "every " + (time.Duration(s.EveryMs) * time.Millisecond).String()
	case KindCron:
		tz := s.TZ
		if tz == "" {
			tz = "local time"
		}
		return fmt.Sprintf("cron %q (%s)", s.Expr, tz)
	}
	return s.Kind
}
