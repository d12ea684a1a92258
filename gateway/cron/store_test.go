package cron

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"errors"
	"os"

	"github.com/nanobot-go/nanobot/gateway/natsbus/natstest"
)

// stores returns two Stores over the same jobs, as two processes (or two
// machines) would hold them: file-backed, and on one NATS KV bucket.
func stores(t *testing.T) map[string][2]*Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cron", "jobs.json")
	out := map[string][2]*Store{"file": {NewStore(path), NewStore(path)}}

	srv := natstest.Start(t)
	var kvs [2]*Store
	for i := range kvs {
		js, err := jetstream.New(srv.Connect(t))
		if err != nil {
			t.Fatal(err)
		}
		kv, err := js.CreateOrUpdateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "TEST_CRON", History: 1})
		if err != nil {
			t.Fatal(err)
		}
		if kvs[i], err = NewKVStore(t.Context(), kv, nil); err != nil {
			t.Fatal(err)
		}
	}
	out["kv"] = kvs
	return out
}

func TestConcurrentChangesLoseNothing(t *testing.T) {
	for name, pair := range stores(t) {
		t.Run(name, func(t *testing.T) {
			const each = 25
			var wg sync.WaitGroup
			errs := make(chan error, 2*each)
			for i, s := range pair {
				wg.Go(func() {
					for n := range each {
						errs <- s.Add(t.Context(), Job{ID: fmt.Sprintf("p%d-%d", i, n), Name: "job", Enabled: true})
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			for i, s := range pair {
				jobs, err := s.Jobs(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				if len(jobs) != 2*each {
					t.Fatalf("store %d sees %d jobs, want %d", i, len(jobs), 2*each)
				}
			}
			if err := pair[1].Remove(t.Context(), "p0-3", ""); err != nil {
				t.Fatal(err)
			}
			if err := pair[0].Remove(t.Context(), "p0-3", ""); err == nil {
				t.Fatal("removing a removed job succeeded")
			}
			if jobs, _ := pair[0].Jobs(t.Context()); len(jobs) != 2*each-1 {
				t.Fatalf("%d jobs after a removal, want %d", len(jobs), 2*each-1)
			}
		})
	}
}

func TestKVChangesWakeOtherInstances(t *testing.T) {
	pair := stores(t)["kv"]
	a, b := pair[0], pair[1]
	drain := func(s *Store) {
		for {
			select {
			case <-s.Changed():
			default:
				return
			}
		}
	}
	drain(b)
	if err := a.Add(t.Context(), Job{ID: "x", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.Changed():
	case <-time.After(10 * time.Second):
		t.Fatal("a job added on one instance did not wake the other")
	}
	if jobs, err := b.Jobs(t.Context()); err != nil || len(jobs) != 1 || jobs[0].ID != "x" {
		t.Fatalf("other instance reads %v, %v", jobs, err)
	}
	if got := a.Path(); got != "nats-kv:TEST_CRON/jobs" {
		t.Errorf("Path = %q", got)
	}
}

func TestCorruptJobsAreAnError(t *testing.T) {
	srv := natstest.Start(t)
	js, _ := jetstream.New(srv.Connect(t))
	kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "BAD_CRON"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(context.Background(), KVKey, []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	s, err := NewKVStore(t.Context(), kv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Jobs(t.Context()); err == nil {
		t.Fatal("corrupt jobs read without error")
	}
	if err := s.Add(t.Context(), Job{ID: "y"}); err == nil {
		t.Fatal("a change over corrupt jobs succeeded (it would erase them)")
	}
}

func TestMoveToKVCopiesFileJobsOnce(t *testing.T) {
	srv := natstest.Start(t)
	js, _ := jetstream.New(srv.Connect(t))
	kv, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "MOVE_CRON"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	first := NewStore(filepath.Join(dir, "a", "jobs.json"))
	if err := first.Add(t.Context(), Job{ID: "from-file", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if err := first.MoveToKV(t.Context(), kv, nil); err != nil {
		t.Fatal(err)
	}
	// A second instance with its own (different) file finds the bucket
	// filled and keeps it.
	second := NewStore(filepath.Join(dir, "b", "jobs.json"))
	if err := second.Add(t.Context(), Job{ID: "other-file", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if err := second.MoveToKV(t.Context(), kv, nil); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Store{first, second} {
		jobs, err := s.Jobs(t.Context())
		if err != nil || len(jobs) != 1 || jobs[0].ID != "from-file" {
			t.Fatalf("jobs %v, %v; want the first file's job only", jobs, err)
		}
	}
}

func TestKVRetryStopsWhenCtxEnds(t *testing.T) {
	srv := natstest.Start(t)
	js, _ := jetstream.New(srv.Connect(t))
	kv, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "BUSY_CRON"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewKVStore(t.Context(), kv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(t.Context(), Job{ID: "first"}); err != nil {
		t.Fatal(err)
	}
	// Another writer changes the jobs between every read and write of
	// ours, so every attempt conflicts; the caller gives up after three.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	attempts := 0
	err = s.Update(ctx, func(jobs []Job) ([]Job, error) {
		attempts++
		if _, err := kv.Put(t.Context(), KVKey, []byte(`{"version":1,"jobs":[]}`)); err != nil {
			return nil, err
		}
		if attempts == 3 {
			cancel()
		}
		return append(jobs, Job{ID: "mine"}), nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if attempts != 3 {
		t.Errorf("%d attempts, want 3 (no retry after the caller gave up)", attempts)
	}
}

// TestJobsFileLayout pins jobs.json to the Python nanobot's layout.
func TestJobsFileLayout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.json")
	s := NewStore(path)
	j := Job{ID: "a1b2c3d4", Name: "standup", Enabled: true,
		Schedule:    Schedule{Kind: KindCron, Expr: "0 9 * * 1-5", TZ: "Europe/Berlin"},
		Payload:     Payload{Kind: "agent_turn", Message: "standup", Deliver: true, Channel: "telegram", To: "42"},
		State:       State{NextRunAtMs: 1767254400000},
		CreatedAtMs: 1767168000000, UpdatedAtMs: 1767168000000}
	if err := s.Add(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "version": 1,
  "jobs": [
    {
      "id": "a1b2c3d4",
      "name": "standup",
      "enabled": true,
      "schedule": {
        "kind": "cron",
        "expr": "0 9 * * 1-5",
        "tz": "Europe/Berlin"
      },
      "payload": {
        "kind": "agent_turn",
        "message": "standup",
        "deliver": true,
        "channel": "telegram",
        "to": "42"
      },
      "state": {
        "nextRunAtMs": 1767254400000
      },
      "createdAtMs": 1767168000000,
      "updatedAtMs": 1767168000000
    }
  ]
}
`
	if string(got) != want {
		t.Errorf("jobs.json:\n%s\nwant:\n%s", got, want)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("jobs.json mode %v, want 0600", fi.Mode().Perm())
	}
}
