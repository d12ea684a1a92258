package cron

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/tools"
	crontool "github.com/nanobot-go/nanobot/tools/cron"
)

type sink struct {
	mu  sync.Mutex
	got []bus.Inbound
}

func (s *sink) publish(_ context.Context, m bus.Inbound) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, m)
	return nil
}

func (s *sink) count() int { return len(s.all()) }

func (s *sink) all() []bus.Inbound {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bus.Inbound(nil), s.got...)
}

// addJob adds a job through the real cron tool, as the agent would.
func addJob(t *testing.T, store *Store, args map[string]any) string {
	t.Helper()
	tool := crontool.NewTool(store.ForTool(), time.UTC)
	ctx := tools.WithCallContext(context.Background(), tools.CallContext{Channel: "telegram", ChatID: "42", SessionKey: "telegram:42"})
	args["action"] = "add"
	if _, err := tool.Execute(ctx, args); err != nil {
		t.Fatal(err)
	}
	list, _ := store.Jobs(context.Background())
	return list[len(list)-1].ID
}

func run(ctx context.Context, svc *Service) chan struct{} {
	done := make(chan struct{})
	go func() { _ = svc.Run(ctx); close(done) }()
	return done
}

func TestEveryAndAtJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := NewStore(filepath.Join(t.TempDir(), "jobs.json"))
		out := &sink{}
		addJob(t, store, map[string]any{"message": "drink water", "every_seconds": 3600})
		addJob(t, store, map[string]any{"message": "call mom", "at": time.Now().Add(90 * time.Minute).UTC().Format(time.RFC3339)})
		gone := addJob(t, store, map[string]any{"message": "never", "at": time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)})
		if err := store.Remove(context.Background(), gone, "telegram:42"); err != nil {
			t.Fatal(err)
		}

		ctx, cancel := context.WithCancel(context.Background())
		done := run(ctx, New(store, out.publish, nil))
		time.Sleep(59 * time.Minute)
		synctest.Wait()
		if out.count() != 0 {
			t.Fatalf("fired early: %v", out.all())
		}
		time.Sleep(2 * time.Minute) // t = 61 min: the hourly job
		synctest.Wait()
		if got := out.all(); len(got) != 1 || got[0].ChatID != "42" || got[0].Channel != "telegram" || got[0].Key() != "telegram:42" {
			t.Fatalf("after 61 min: %+v", got)
		}
		time.Sleep(30 * time.Minute) // t = 91 min: the one-off job
		synctest.Wait()
		if out.count() != 2 {
			t.Fatalf("after 91 min: %d messages", out.count())
		}
		time.Sleep(4 * time.Hour) // hourly at 2h, 3h, 4h, 5h; "never" never
		synctest.Wait()
		if out.count() != 6 {
			t.Errorf("after 5h31m: %d messages, want 6", out.count())
		}
		for _, m := range out.all() {
			if m.Source != bus.SourceCron || m.SourceRef == "" {
				t.Error("cron message not marked as cron (the cron tool must refuse to nest)")
			}
		}
		left, _ := store.Jobs(context.Background())
		if len(left) != 1 {
			t.Errorf("jobs left %d, want only the recurring one", len(left))
		}
		cancel()
		<-done
	})
}

func TestRestartCatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := NewStore(filepath.Join(t.TempDir(), "jobs.json"))
		out := &sink{}
		addJob(t, store, map[string]any{"message": "hourly", "every_seconds": 3600})
		addJob(t, store, map[string]any{"message": "soon", "at": time.Now().Add(3 * time.Hour).UTC().Format(time.RFC3339)})
		addJob(t, store, map[string]any{"message": "stale", "at": time.Now().Add(time.Hour + time.Minute).UTC().Format(time.RFC3339)})

		// The gateway is down for 26 hours: the hourly job missed 26 runs,
		// "soon" is 23 h late, "stale" is over 24 h late.
		time.Sleep(26*time.Hour + 30*time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		done := run(ctx, New(store, out.publish, nil))
		time.Sleep(time.Second)
		synctest.Wait()
		cancel()
		<-done
		got := map[string]int{}
		for _, m := range out.all() {
			got[m.Content[len(m.Content)-len("hourly"):]]++
		}
		if out.count() != 2 || got["hourly"] != 1 {
			t.Errorf("catch-up fired %d messages: %v; want the hourly job once and 'soon' once", out.count(), out.all())
		}
		list, _ := store.Jobs(context.Background())
		for _, j := range list {
			if j.Payload.Message == "stale" && (j.Enabled || j.State.LastStatus != "missed") {
				t.Errorf("stale job: %+v", j)
			}
			if j.Payload.Message == "hourly" && !time.UnixMilli(j.State.NextRunAtMs).After(time.Now()) {
				t.Error("hourly job's next run not moved past now")
			}
		}
	})
}

func TestCronExpressionAcrossDST(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	s := Schedule{Kind: KindCron, Expr: "0 9 * * *", TZ: "Europe/Berlin"}
	// Clocks go forward on 2026-03-29 in Berlin.
	after := time.Date(2026, 3, 27, 10, 0, 0, 0, berlin)
	first, ok := s.Next(after, after)
	if !ok {
		t.Fatal("no next run")
	}
	second, _ := s.Next(first, after)
	if first.In(berlin).Hour() != 9 || second.In(berlin).Hour() != 9 {
		t.Errorf("local hours %d, %d; want 9", first.In(berlin).Hour(), second.In(berlin).Hour())
	}
	if first.UTC().Hour() != 8 || second.UTC().Hour() != 7 {
		t.Errorf("UTC hours %d, %d; want 8 then 7 across the DST change", first.UTC().Hour(), second.UTC().Hour())
	}
	if got := second.Sub(first); got != 23*time.Hour {
		t.Errorf("gap %v, want 23h on the short day", got)
	}
}

func TestCronToolRules(t *testing.T) {
	store := NewStore(filepath.Join(t.TempDir(), "jobs.json"))
	tool := crontool.NewTool(store.ForTool(), time.UTC)
	cronCtx := tools.WithCallContext(context.Background(), tools.CallContext{Channel: "tg", ChatID: "1", SessionKey: "tg:1", FromCron: true})
	if _, err := tool.Execute(cronCtx, map[string]any{"action": "add", "message": "x", "every_seconds": 120}); err == nil {
		t.Error("a cron-triggered turn created a job")
	}
	ctx := tools.WithCallContext(context.Background(), tools.CallContext{Channel: "tg", ChatID: "1", SessionKey: "tg:1"})
	for _, bad := range []map[string]any{
		{"message": "x"},
		{"message": "x", "every_seconds": 10},
		{"message": "x", "cron_expr": "not a cron"},
		{"message": "x", "cron_expr": "0 9 * * *", "tz": "Mars/Olympus"},
		{"message": "x", "at": "2001-01-01T00:00"},
		{"message": "x", "at": "tomorrow-ish"},
		{"message": "x", "every_seconds": 120, "cron_expr": "0 9 * * *"},
	} {
		bad["action"] = "add"
		if _, err := tool.Execute(ctx, bad); err == nil {
			t.Errorf("accepted %v", bad)
		}
	}
	if _, err := tool.Execute(ctx, map[string]any{"action": "add", "message": "standup", "cron_expr": "0 9 * * 1-5", "tz": "Asia/Shanghai"}); err != nil {
		t.Fatal(err)
	}
	other := tools.WithCallContext(context.Background(), tools.CallContext{Channel: "tg", ChatID: "2", SessionKey: "tg:2"})
	res, _ := tool.Execute(other, map[string]any{"action": "list"})
	if res.Content != "No scheduled jobs in this conversation." {
		t.Errorf("another chat sees the job: %q", res.Content)
	}
	list, _ := store.Jobs(context.Background())
	if _, err := tool.Execute(other, map[string]any{"action": "remove", "job_id": list[0].ID}); err == nil {
		t.Error("another chat removed the job")
	}
	if _, err := tool.Execute(ctx, map[string]any{"action": "remove", "job_id": list[0].ID}); err != nil {
		t.Errorf("owner could not remove: %v", err)
	}
}

// A run's status is recorded after its message was handed over: "firing"
// while the publish is under way, then "ok", or "error" with the reason
// when the agent's inbox did not take it.
func TestRunStatusAfterPublish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := NewStore(filepath.Join(t.TempDir(), "jobs.json"))
		id := addJob(t, store, map[string]any{"message": "stretch", "every_seconds": 60})
		status := func() (string, string) {
			list, err := store.Jobs(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range list {
				if j.ID == id {
					return j.State.LastStatus, j.State.LastError
				}
			}
			t.Fatalf("job %s gone", id)
			return "", ""
		}
		var mu sync.Mutex
		var during []string
		fail := true
		publish := func(context.Context, bus.Inbound) error {
			st, _ := status()
			mu.Lock()
			defer mu.Unlock()
			during = append(during, st)
			if fail {
				return errors.New("bus closed")
			}
			return nil
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := run(ctx, New(store, publish, nil))
		time.Sleep(61 * time.Second)
		synctest.Wait()
		if st, msg := status(); st != StatusError || msg != "bus closed" {
			t.Errorf("after a failed publish: %q %q, want error", st, msg)
		}
		mu.Lock()
		fail = false
		mu.Unlock()
		time.Sleep(60 * time.Second)
		synctest.Wait()
		if st, msg := status(); st != StatusOK || msg != "" {
			t.Errorf("after a publish: %q %q, want ok", st, msg)
		}
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		if len(during) != 2 || during[0] != StatusFiring || during[1] != StatusFiring {
			t.Errorf("status while publishing = %q, want firing twice", during)
		}
	})
}
