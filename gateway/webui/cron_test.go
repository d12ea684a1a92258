package webui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/cron"
)

func TestCronAPI(t *testing.T) {
	dir := t.TempDir()
	store := cron.NewStore(filepath.Join(dir, "jobs.json"))
	b := newBench(t, true, false, func(o *Options) { o.Cron = store })
	tok := b.csrf()
	hdr := map[string]string{"X-CSRF-Token": tok}

	for _, tc := range []struct{ body, path string }{
		{`{"name":"","message":"x","target":"telegram:1","schedule":{"kind":"every","everySeconds":3600}}`, "name"},
		{`{"name":"n","message":" ","target":"telegram:1","schedule":{"kind":"every","everySeconds":3600}}`, "message"},
		{`{"name":"n","message":"m","target":"telegram:1","schedule":{"kind":"weekly"}}`, "schedule.kind"},
		{`{"name":"n","message":"m","target":"telegram:1","schedule":{"kind":"every","everySeconds":59}}`, "schedule.everySeconds"},
		{`{"name":"n","message":"m","target":"telegram:1","schedule":{"kind":"at","at":"tomorrow"}}`, "schedule.at"},
		{`{"name":"n","message":"m","target":"telegram:1","schedule":{"kind":"at","at":"2020-01-01T00:00:00Z"}}`, "schedule.at"},
		{`{"name":"n","message":"m","target":"telegram:1","schedule":{"kind":"cron","expr":"61 * * * *"}}`, "schedule.expr"},
		{`{"name":"n","message":"m","target":"telegram:1","schedule":{"kind":"cron","expr":"0 9 * * *","tz":"Mars/Olympus"}}`, "schedule.tz"},
		{`{"name":"n","message":"m","target":"nowhere","schedule":{"kind":"every","everySeconds":3600}}`, "target"},
	} {
		code, body, _ := b.do("POST", "/api/cron", tc.body, hdr)
		if code != 400 || body["path"] != tc.path {
			t.Errorf("POST %s: %d %v, want 400 on path %s", tc.body, code, body, tc.path)
		}
	}
	if code, _, _ := b.do("POST", "/api/cron", `{"name":"n","message":"m","target":"telegram:1","schedule":{"kind":"every","everySeconds":3600}}`, nil); code != 403 {
		t.Errorf("add without CSRF: %d, want 403", code)
	}
	if jobs, _ := store.Jobs(context.Background()); len(jobs) != 0 {
		t.Fatalf("refused requests stored %d jobs", len(jobs))
	}

	code, body, _ := b.do("POST", "/api/cron", `{"name":"Morning brief","message":"Summarise my day","target":"telegram:42","schedule":{"kind":"cron","expr":"0 8 * * 1-5","tz":"Europe/Lisbon"}}`, hdr)
	if code != 201 {
		t.Fatalf("add: %d %v", code, body)
	}
	id := body["job"].(map[string]any)["id"].(string)
	jobs, err := store.Jobs(context.Background())
	if err != nil || len(jobs) != 1 {
		t.Fatalf("store has %d jobs (%v)", len(jobs), err)
	}
	j := jobs[0]
	if j.Schedule.TZ != "Europe/Lisbon" || j.Payload.Channel != "telegram" || j.Payload.To != "42" || !j.Enabled || j.State.NextRunAtMs == 0 {
		t.Errorf("stored job %+v", j)
	}
	code, body, _ = b.do("GET", "/api/cron", "", nil)
	if code != 200 || len(body["jobs"].([]any)) != 1 || body["jobs"].([]any)[0].(map[string]any)["nextRun"] == nil {
		t.Fatalf("list: %d %v", code, body)
	}

	if code, _, _ := b.do("PATCH", "/api/cron/"+id, `{"enabled":false}`, hdr); code != 200 {
		t.Fatalf("pause: %d", code)
	}
	if code, body, _ := b.do("POST", "/api/cron/"+id+"/run", "", hdr); code != 409 || body["path"] != "enabled" {
		t.Errorf("run a paused job: %d %v, want 409", code, body)
	}
	if code, _, _ := b.do("PATCH", "/api/cron/"+id, `{"enabled":true}`, hdr); code != 200 {
		t.Fatalf("resume: %d", code)
	}
	before := b.clock.Now()
	if code, body, _ := b.do("POST", "/api/cron/"+id+"/run", "", hdr); code != 200 {
		t.Fatalf("run now: %d %v", code, body)
	}
	jobs, _ = store.Jobs(context.Background())
	if got := time.UnixMilli(jobs[0].State.NextRunAtMs); !got.Equal(before.Truncate(time.Millisecond)) {
		t.Errorf("after run now the next run is %v, want now (%v)", got, before)
	}
	if code, _, _ := b.do("DELETE", "/api/cron/"+id, "", nil); code != 403 {
		t.Errorf("delete without CSRF: %d, want 403", code)
	}
	if code, _, _ := b.do("DELETE", "/api/cron/"+id, "", hdr); code != 200 {
		t.Fatalf("delete: %d", code)
	}
	if code, body, _ := b.do("DELETE", "/api/cron/"+id, "", hdr); code != 404 || body["path"] != "id" {
		t.Errorf("delete again: %d %v, want 404", code, body)
	}
	if code, _, _ := b.do("POST", "/api/cron/nope/run", "", hdr); code != 404 {
		t.Errorf("run unknown: %d, want 404", code)
	}
}

func TestHeartbeatAPI(t *testing.T) {
	ws := t.TempDir()
	b := newBench(t, true, false, func(o *Options) {
		o.Workspace = ws
		o.Heartbeat = configs.HeartbeatConfig{Enabled: true, IntervalS: 1800}
	})
	code, body, _ := b.do("GET", "/api/heartbeat", "", nil)
	if code != 200 || body["content"] != "" || body["enabled"] != true {
		t.Fatalf("empty heartbeat: %d %v", code, body)
	}
	hdr := map[string]string{"X-CSRF-Token": b.csrf()}
	if code, _, _ := b.do("PUT", "/api/heartbeat", `{"content":"x"}`, nil); code != 403 {
		t.Errorf("PUT without CSRF: %d, want 403", code)
	}
	if code, _, _ := b.do("PUT", "/api/heartbeat", `{"content":"- [ ] check the mail\n"}`, hdr); code != 200 {
		t.Fatalf("PUT: %d", code)
	}
	got, err := os.ReadFile(filepath.Join(ws, "HEARTBEAT.md"))
	if err != nil || string(got) != "- [ ] check the mail\n" {
		t.Fatalf("HEARTBEAT.md = %q (%v)", got, err)
	}
	big := `{"content":"` + strings.Repeat("x", maxHeartbeat+1) + `"}`
	if code, body, _ := b.do("PUT", "/api/heartbeat", big, hdr); code != 400 || body["path"] != "content" {
		t.Errorf("oversized: %d %v, want 400 on path content", code, body)
	}
}
