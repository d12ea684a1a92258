// Package cron is the agent's `cron` tool: it adds, lists and removes the
// scheduled jobs of the current conversation. The jobs themselves (model,
// jobs.json, schedules) belong to gateway/cron; the tool works on the small
// Jobs interface declared here, and cmd wires the store in, so tools never
// import the gateway.
//
// Concurrency: a Tool is safe for concurrent use when its Jobs is.
package cron

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/tools"
)

// Jobs is the job store as the tool sees it. Its methods do IO and may
// block; they return errors worded for the model.
type Jobs interface {
	// Add validates the schedule of spec, stores the job and returns it.
	Add(ctx context.Context, spec Spec) (Listed, error)
	// List returns the jobs of a session (every job when session is "").
	List(ctx context.Context, session string) ([]Listed, error)
	// Remove deletes job id; with session set, only a job of that session.
	Remove(ctx context.Context, id, session string) error
}

// Spec is a job to add: exactly one of At, Every and CronExpr is set.
type Spec struct {
	// Name is a short label; Message is what the agent is told when the job
	// fires.
	Name, Message string
	// At is a one-off time.
	At time.Time
	// Every is a recurring interval.
	Every time.Duration
	// CronExpr is a 5-field cron expression, in timezone TZ (IANA; ""
	// means the gateway's local time).
	CronExpr, TZ string
	// Channel, ChatID and SessionKey are the conversation the reply goes to.
	Channel, ChatID, SessionKey string
}

// Listed is a stored job.
type Listed struct {
	ID, Name string
	// Schedule describes when the job runs, for people and the model.
	Schedule string
	// Next is the next run (zero when the job will not run again).
	Next    time.Time
	Message string
}

// Tool is the `cron` tool. It refuses to add jobs from inside a
// cron-triggered turn (no self-replicating schedules).
type Tool struct {
	jobs Jobs
	// loc is the default timezone for times without an offset.
	loc *time.Location
	now func() time.Time
}

var _ tools.Tool = (*Tool)(nil)

// NewTool returns the tool over jobs. loc may be nil (local time).
func NewTool(jobs Jobs, loc *time.Location) *Tool {
	if loc == nil {
		loc = time.Local
	}
	return &Tool{jobs: jobs, loc: loc, now: time.Now}
}

func (t *Tool) Name() string { return "cron" }

func (t *Tool) Description() string {
	return "Schedule reminders and recurring tasks for this conversation. action=add with message and exactly one of: " +
		"at (a date-time like 2026-12-24T09:00, local to tz), every_seconds (>= 60), or cron_expr (5 fields, e.g. '0 9 * * 1-5') with optional tz (IANA, e.g. Europe/Berlin). " +
		"When a job fires you receive its message as a task and your reply is sent to this chat. action=list shows this conversation's jobs; action=remove deletes one by job_id."
}

func (t *Tool) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"action":        map[string]any{"type": "string", "enum": []any{"add", "list", "remove"}},
			"message":       map[string]any{"type": "string", "description": "what to do or remind when the job fires"},
			"name":          map[string]any{"type": "string", "description": "short label"},
			"at":            map[string]any{"type": "string", "description": "one-off time, ISO 8601"},
			"every_seconds": map[string]any{"type": "integer", "minimum": 60},
			"cron_expr":     map[string]any{"type": "string"},
			"tz":            map[string]any{"type": "string", "description": "IANA timezone for at and cron_expr"},
			"job_id":        map[string]any{"type": "string"},
		},
		"required": []any{"action"},
	}
}

func (t *Tool) Execute(ctx context.Context, args map[string]any) (tools.Result, error) {
	cc, _ := tools.CallContextFrom(ctx)
	action, _ := args["action"].(string)
	switch action {
	case "add":
		return t.add(ctx, cc, args)
	case "list":
		return t.list(ctx, cc)
	case "remove":
		id, _ := args["job_id"].(string)
		if id == "" {
			return tools.Result{}, errors.New("remove needs job_id (see action=list)")
		}
		if err := t.jobs.Remove(ctx, id, cc.SessionKey); err != nil {
			return tools.Result{}, err
		}
		return tools.Result{Content: "Removed job " + id + "."}, nil
	}
	return tools.Result{}, fmt.Errorf("unknown action %q: want add, list or remove", action)
}

func (t *Tool) add(ctx context.Context, cc tools.CallContext, args map[string]any) (tools.Result, error) {
	if cc.FromCron {
		return tools.Result{}, errors.New("jobs cannot be created from inside a scheduled job")
	}
	if cc.Channel == "" {
		return tools.Result{}, errors.New("no conversation to deliver to")
	}
	msg, _ := args["message"].(string)
	if strings.TrimSpace(msg) == "" {
		return tools.Result{}, errors.New("add needs a message")
	}
	tz, _ := args["tz"].(string)
	loc := t.loc
	if tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil {
			return tools.Result{}, fmt.Errorf("unknown timezone %q", tz)
		}
		loc = l
	} else if t.loc != time.Local {
		tz = t.loc.String()
	}
	spec := Spec{Message: msg, Channel: cc.Channel, ChatID: cc.ChatID, SessionKey: cc.SessionKey}
	n := 0
	if at, _ := args["at"].(string); at != "" {
		n++
		when, err := parseTime(at, loc)
		if err != nil {
			return tools.Result{}, err
		}
		if !when.After(t.now()) {
			return tools.Result{}, fmt.Errorf("%s is in the past (now is %s)", when.Format(time.RFC3339), t.now().In(loc).Format(time.RFC3339))
		}
		spec.At = when
	}
	if ev, ok := args["every_seconds"]; ok && ev != nil {
		n++
		var sec int64
		switch v := ev.(type) {
		case int:
			sec = int64(v)
		case int64:
			sec = v
		case float64:
			sec = int64(v)
		}
		spec.Every = time.Duration(sec) * time.Second
	}
	if expr, _ := args["cron_expr"].(string); expr != "" {
		n++
		spec.CronExpr, spec.TZ = expr, tz
	}
	if n != 1 {
		return tools.Result{}, errors.New("give exactly one of at, every_seconds, cron_expr")
	}
	spec.Name, _ = args["name"].(string)
	if spec.Name == "" {
		spec.Name = truncate(msg, 40)
	}
	j, err := t.jobs.Add(ctx, spec)
	if err != nil {
		return tools.Result{}, err
	}
	return tools.Result{Content: fmt.Sprintf("Scheduled job %s (%s): %s. Next run: %s.", j.ID, j.Name, j.Schedule, j.Next.In(loc).Format("2006-01-02 15:04 MST"))}, nil
}

func (t *Tool) list(ctx context.Context, cc tools.CallContext) (tools.Result, error) {
	jobs, err := t.jobs.List(ctx, cc.SessionKey)
	if err != nil {
		return tools.Result{}, err
	}
	var b strings.Builder
	for _, j := range jobs {
		next := "-"
		if !j.Next.IsZero() {
			next = j.Next.In(t.loc).Format("2006-01-02 15:04 MST")
		}
		fmt.Fprintf(&b, "- %s %q: %s, next %s, message: %s\n", j.ID, j.Name, j.Schedule, next, truncate(j.Message, 80))
	}
	if b.Len() == 0 {
		return tools.Result{Content: "No scheduled jobs in this conversation."}, nil
	}
	return tools.Result{Content: b.String()}, nil
}

// parseTime accepts RFC 3339 and offset-less forms (local to loc).
func parseTime(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("cannot read time %q: use ISO 8601 like 2026-12-24T09:00", s)
}

func truncate(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}
