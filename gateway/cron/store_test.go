package cron

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/nanobot-go/nanobot/gateway/bus/natsbus/natstest"
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
						errs <- s.Add(Job{ID: fmt.Sprintf("p%d-%d", i, n), Name: "job", Enabled: true})
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
				jobs, err := s.Jobs()
				if err != nil {
					t.Fatal(err)
				}
				if len(jobs) != 2*each {
					t.Fatalf("store %d sees %d jobs, want %d", i, len(jobs), 2*each)
				}
			}
			if err := pair[1].Remove("p0-3", ""); err != nil {
				t.Fatal(err)
			}
			if err := pair[0].Remove("p0-3", ""); err == nil {
				t.Fatal("removing a removed job succeeded")
			}
			if jobs, _ := pair[0].Jobs(); len(jobs) != 2*each-1 {
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
	if err := a.Add(Job{ID: "x", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.Changed():
	case <-time.After(10 * time.Second):
		t.Fatal("a job added on one instance did not wake the other")
	}
	if jobs, err := b.Jobs(); err != nil || len(jobs) != 1 || jobs[0].ID != "x" {
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
	if _, err := s.Jobs(); err == nil {
		t.Fatal("corrupt jobs read without error")
	}
	if err := s.Add(Job{ID: "y"}); err == nil {
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
	if err := first.Add(Job{ID: "from-file", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if err := first.MoveToKV(t.Context(), kv, nil); err != nil {
		t.Fatal(err)
	}
	// A second instance with its own (different) file finds the bucket
	// filled and keeps it.
	second := NewStore(filepath.Join(dir, "b", "jobs.json"))
	if err := second.Add(Job{ID: "other-file", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if err := second.MoveToKV(t.Context(), kv, nil); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Store{first, second} {
		jobs, err := s.Jobs()
		if err != nil || len(jobs) != 1 || jobs[0].ID != "from-file" {
			t.Fatalf("jobs %v, %v; want the first file's job only", jobs, err)
		}
	}
}
