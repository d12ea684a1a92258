package goals

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/tools"
)

func call(t *testing.T, tool tools.Tool, cc tools.CallContext, args map[string]any) (string, error) {
	t.Helper()
	r := tools.NewRegistry()
	if err := r.Register(tool); err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(tools.WithCallContext(context.Background(), cc), tool.Name(), args)
	return res.Content, err
}

var owner = tools.CallContext{Channel: "telegram", ChatID: "1", SessionKey: "telegram:1", SenderID: "1|ann", Admin: true}

func TestGoalLifecycle(t *testing.T) {
	s := NewStore(filepath.Join(t.TempDir(), "goals.json"))
	all := Tools(s, "helper")
	create, update, list := all[0], all[1], all[2]

	guest := owner
	guest.Admin = false
	if _, err := call(t, create, guest, map[string]any{"objective": "x"}); err == nil || !strings.Contains(err.Error(), "admin") {
		t.Errorf("a non-admin set a goal: %v", err)
	}
	if _, err := call(t, create, owner, map[string]any{"objective": "Get the test suite green; done when go test passes", "ui_summary": "green tests"}); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, create, owner, map[string]any{"objective": "another"}); err == nil || !strings.Contains(err.Error(), "already has an active goal") {
		t.Errorf("a second active goal: %v", err)
	}
	other := owner
	other.SessionKey, other.ChatID = "telegram:2", "2"
	if _, err := call(t, create, other, map[string]any{"objective": "a goal elsewhere"}); err != nil {
		t.Errorf("another chat's goal: %v", err)
	}
	if _, err := call(t, update, owner, map[string]any{"action": "progress"}); err == nil {
		t.Error("progress without a recap was taken")
	}
	if _, err := call(t, update, guest, map[string]any{"action": "progress", "recap": "fixed 3 of 5 failures"}); err != nil {
		t.Fatal(err) // a check-in turn is not an admin's, and reports progress
	}
	if _, err := call(t, update, guest, map[string]any{"action": "replace", "objective": "something else"}); err == nil {
		t.Error("a non-admin replaced the objective")
	}
	out, err := call(t, list, owner, map[string]any{})
	if err != nil || !strings.Contains(out, "green tests") || !strings.Contains(out, "fixed 3 of 5") || strings.Contains(out, "elsewhere") {
		t.Errorf("list of this chat: %q %v", out, err)
	}
	out, _ = call(t, list, owner, map[string]any{"all": true})
	if !strings.Contains(out, "elsewhere") {
		t.Errorf("list all: %q", out)
	}
	if _, err := call(t, list, guest, map[string]any{"all": true}); err == nil {
		t.Error("a non-admin listed every chat's goals")
	}
	if _, err := call(t, update, owner, map[string]any{"action": "complete", "recap": "all green"}); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, update, owner, map[string]any{"action": "progress", "recap": "more"}); err == nil {
		t.Error("progress on a finished goal")
	}
	goals, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(goals) != 2 || goals[0].Status != Active || goals[1].Status != Complete || goals[1].Agent != "helper" || len(goals[1].Notes) != 2 {
		t.Errorf("stored: %+v", goals)
	}
	if fi, err := os.Stat(filepath.Join(filepath.Dir(s.path), "goals.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("goals.json mode: %v %v", fi.Mode(), err)
	}
}

func TestDueAdvancesEachActiveGoalOncePerInterval(t *testing.T) {
	s := NewStore(filepath.Join(t.TempDir(), "goals.json"))
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	err := s.Update(func([]Goal) ([]Goal, error) {
		return []Goal{
			{ID: "a", SessionKey: "k1", Status: Active, Objective: "watch the price", Advanced: t0},
			{ID: "b", SessionKey: "k2", Status: Blocked, Advanced: t0},
			{ID: "c", SessionKey: "k3", Status: Active, Advanced: t0.Add(20 * time.Minute), Notes: []Note{{Time: t0, Text: "price 320"}}},
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	due, err := s.Due(t0.Add(30*time.Minute), 30*time.Minute)
	if err != nil || len(due) != 1 || due[0].ID != "a" {
		t.Fatalf("due at +30m: %+v %v", due, err)
	}
	if due, _ := s.Due(t0.Add(31*time.Minute), 30*time.Minute); len(due) != 0 {
		t.Errorf("advanced again a minute later: %+v", due)
	}
	due, _ = s.Due(t0.Add(50*time.Minute), 30*time.Minute)
	if len(due) != 1 || due[0].ID != "c" {
		t.Fatalf("due at +50m: %+v", due)
	}
	msg := CheckIn(due[0], "SILENT")
	if !strings.Contains(msg, "price 320") || !strings.Contains(msg, "SILENT") || !strings.Contains(msg, "update_goal") {
		t.Errorf("check-in:\n%s", msg)
	}
}

func TestNewerFormatIsRefusedAndPruned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "goals.json")
	if err := os.WriteFile(path, []byte(`{"version": 99, "goals": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := NewStore(path)
	if _, err := s.List(); err == nil || !strings.Contains(err.Error(), "newer nanobot") {
		t.Errorf("newer format read: %v", err)
	}
	if err := s.Update(func(g []Goal) ([]Goal, error) { return g, nil }); err == nil {
		t.Error("newer format rewritten")
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "99") {
		t.Error("the newer file was changed")
	}
	s = NewStore(filepath.Join(t.TempDir(), "goals.json"))
	_ = s.Update(func([]Goal) ([]Goal, error) {
		var gs []Goal
		for i := range maxDone + 10 {
			notes := make([]Note, maxNotes+5)
			gs = append(gs, Goal{ID: string(rune('a' + i%26)), Status: Complete, Notes: notes})
		}
		return append(gs, Goal{ID: "live", Status: Active}), nil
	})
	gs, _ := s.List()
	if len(gs) != maxDone+1 || gs[0].ID != "live" || len(gs[1].Notes) != maxNotes {
		t.Errorf("pruned to %d goals, first %q, %d notes", len(gs), gs[0].ID, len(gs[1].Notes))
	}
}

// TestDueTwoBeatsAtOnce: two processes beating at the same moment (cluster
// workers) advance each due goal once between them; a beat with nothing
// due writes nothing.
func TestDueTwoBeatsAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "goals.json")
	s := NewStore(path)
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	_ = s.Update(func([]Goal) ([]Goal, error) {
		return []Goal{{ID: "a", Status: Active, Advanced: t0}, {ID: "b", Status: Active, Advanced: t0}}, nil
	})
	now := t0.Add(time.Hour)
	results := make(chan []Goal, 2)
	for range 2 {
		go func() {
			due, err := NewStore(path).Due(now, 30*time.Minute)
			if err != nil {
				t.Error(err)
			}
			results <- due
		}()
	}
	got := append(<-results, <-results...)
	if len(got) != 2 || got[0].ID == got[1].ID {
		t.Errorf("advanced %+v, want a and b once each", got)
	}
	before, _ := os.Stat(path)
	if due, err := s.Due(now.Add(time.Minute), 30*time.Minute); err != nil || len(due) != 0 {
		t.Fatalf("nothing due: %v %v", due, err)
	}
	if after, _ := os.Stat(path); !os.SameFile(before, after) { // a rewrite renames a new file in
		t.Error("a beat with nothing due rewrote the file")
	}
	if _, err := NewStore(filepath.Join(t.TempDir(), "none.json")).Due(now, time.Minute); err != nil {
		t.Errorf("no goals file: %v", err)
	}
}
