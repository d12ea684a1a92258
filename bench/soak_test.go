package main

import (
	"context"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
)

// TestSoakLedger holds the counting rules of the soak: what is answered,
// interrupted, failed, lost, twice and out of order.
func TestSoakLedger(t *testing.T) {
	const chat = 7
	t0 := time.Now()
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	bot := func(s float64, mid int64, edit bool, text string) telegramtest.Sent {
		return telegramtest.Sent{ChatID: chat, MessageID: mid, Edit: edit, Visible: text, At: at(s)}
	}
	type step struct {
		send string // "q" a question, "stop" a /stop; empty: the bot's message
		at   float64
		sent telegramtest.Sent
	}
	tests := []struct {
		name                                 string
		steps                                []step
		answered, interrupted, failed, lost  int
		twice, outOfOrder, stops, stopsAcked int
	}{
		{name: "answered through a stream's edits", steps: []step{
			{send: "q", at: 0},
			{at: 1, sent: bot(1, 10, false, "Here is the answer [soak-7")},
			{at: 2, sent: bot(2, 10, true, "Here is the answer [soak-7-1]")},
		}, answered: 1},
		{name: "unanswered is lost", steps: []step{
			{send: "q", at: 0},
			{send: "q", at: 0.5},
			{at: 1, sent: bot(1, 10, false, "x [soak-7-1]")},
		}, answered: 1, lost: 1},
		{name: "stopped is interrupted, the queue behind it too", steps: []step{
			{send: "q", at: 0},
			{send: "q", at: 0.1},
			{send: "stop", at: 0.2},
			{at: 1, sent: bot(1, 10, false, "Here is the ans")},
			{at: 1.1, sent: bot(1.1, 11, false, "Stopped.")},
		}, interrupted: 2, stops: 1, stopsAcked: 1},
		{name: "nothing to stop does not excuse", steps: []step{
			{send: "q", at: 0},
			{send: "stop", at: 0.2},
			{at: 1.1, sent: bot(1.1, 11, false, "Nothing to stop.")},
		}, lost: 1, stops: 1, stopsAcked: 1},
		{name: "a question after the stop is not covered by it", steps: []step{
			{send: "stop", at: 0},
			{send: "q", at: 0.1},
			{at: 1, sent: bot(1, 11, false, "Stopped.")},
		}, lost: 1, stops: 1, stopsAcked: 1},
		{name: "an unacknowledged stop is lost", steps: []step{
			{send: "stop", at: 0},
		}, stops: 1},
		{name: "an error reply explains the oldest open question", steps: []step{
			{send: "q", at: 0},
			{send: "q", at: 0.1},
			{at: 1, sent: bot(1, 10, false, "Sorry, the model took too long to answer. Please try again.")},
			{at: 2, sent: bot(2, 11, false, "x [soak-7-2]")},
		}, answered: 1, failed: 1},
		{name: "an error reply after a later answer explains nothing", steps: []step{
			{send: "q", at: 0},
			{send: "q", at: 0.1},
			{at: 1, sent: bot(1, 11, false, "x [soak-7-2]")},
			{at: 2, sent: bot(2, 12, false, "Sorry, something went wrong while answering. Please try again.")},
		}, answered: 1, lost: 1, outOfOrder: 0},
		{name: "a second message is twice, an edit is not", steps: []step{
			{send: "q", at: 0},
			{at: 1, sent: bot(1, 10, false, "x [soak-7-1]")},
			{at: 1.5, sent: bot(1.5, 10, true, "x [soak-7-1].")},
			{at: 2, sent: bot(2, 11, false, "x [soak-7-1]")},
			{at: 3, sent: bot(3, 11, true, "x [soak-7-1]!")},
		}, answered: 1, twice: 1},
		{name: "out of order", steps: []step{
			{send: "q", at: 0},
			{send: "q", at: 0.1},
			{at: 1, sent: bot(1, 10, false, "x [soak-7-2]")},
			{at: 2, sent: bot(2, 11, false, "x [soak-7-1]")},
		}, answered: 2, outOfOrder: 1},
		{name: "one answer for two questions, in order", steps: []step{
			{send: "q", at: 0},
			{send: "q", at: 0.1},
			{at: 1, sent: bot(1, 10, false, "x [soak-7-1] [soak-7-2]")},
		}, answered: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newSoakLedger([]int64{chat}, t0)
			for _, s := range tt.steps {
				switch s.send {
				case "q":
					l.sendQuestion(chat, func(string) {})
				case "stop":
					l.sendStop(chat, func(string) {})
				default:
					l.observe([]telegramtest.Sent{s.sent})
					continue
				}
				// Sent times are the step's, so "before" and "after" hold.
				c := l.chats[chat]
				c.msgs[len(c.msgs)-1].at = at(s.at)
			}
			got := l.tally()[0]
			if got.Answered != tt.answered || got.Interrupted != tt.interrupted || got.Failed != tt.failed || got.Lost != tt.lost ||
				got.Duplicates != tt.twice || got.OutOfOr != tt.outOfOrder || got.Stops != tt.stops || got.StopsAcked != tt.stopsAcked {
				t.Errorf("got answered %d interrupted %d failed %d lost %d twice %d out of order %d stops %d/%d; want %d %d %d %d %d %d %d/%d",
					got.Answered, got.Interrupted, got.Failed, got.Lost, got.Duplicates, got.OutOfOr, got.Stops, got.StopsAcked,
					tt.answered, tt.interrupted, tt.failed, tt.lost, tt.twice, tt.outOfOrder, tt.stops, tt.stopsAcked)
			}
		})
	}
}

// TestSoakModelMarkers: the model answers what was not answered yet.
func TestSoakModelMarkers(t *testing.T) {
	body := map[string]any{"messages": []any{
		map[string]any{"role": "system", "content": "soak-1-99 in the prompt is not a question"},
		map[string]any{"role": "user", "content": "question soak-1-1"},
		map[string]any{"role": "assistant", "content": "[soak-1-1]"},
		map[string]any{"role": "user", "content": "question soak-1-2"},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "question soak-1-3"}}},
	}}
	got := strings.Join(unansweredMarkers(body), " ")
	if want := "soak-1-2 soak-1-3"; got != want {
		t.Errorf("unansweredMarkers = %q, want %q", got, want)
	}
}

// TestSoakSmoke runs a minute of the chaos soak against one gateway built
// with -race: every fault kind of the mode at least once, then a drain.
// It fails on a lost or out-of-order message, a lost /stop, a wrong API
// answer, or a data race or panic in the gateway's log.
func TestSoakSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of faults against the real binary; skipped with -short")
	}
	work := t.TempDir()
	bin := raceBinary(t, work)
	o := defaultSoakOptions()
	o.Duration, o.Drain, o.Chats, o.APIClients = 60*time.Second, 60*time.Second, 4, 1
	o.FaultEvery, o.MaxFault, o.Sample, o.Warmup = 3*time.Second, 5*time.Second, 2*time.Second, 10*time.Second
	o.Seed = uint64(time.Now().UnixNano())
	o.Bin, o.Work = bin, filepath.Join(work, "run")
	if err := os.MkdirAll(o.Work, 0o700); err != nil {
		t.Fatal(err)
	}
	o.Log = log.New(testLog{t}, "", log.Ltime)
	t.Logf("seed %d", o.Seed)
	res, err := runSoak(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.markdown())
	tot, api := res.totals(), res.apiTotals()
	if tot.Lost > 0 || tot.OutOfOr > 0 || tot.StopsLost > 0 || tot.Misrouted > 0 || api.Wrong > 0 || len(res.LogProblems) > 0 {
		t.Errorf("lost %d, out of order %d, /stop lost %d, misrouted %d, wrong API answers %d, log problems %q (logs in %s)",
			tot.Lost, tot.OutOfOr, tot.StopsLost, tot.Misrouted, api.Wrong, res.LogProblems, filepath.Join(o.Work, "logs"))
		keepLogs(t, o.Work)
	}
	if tot.Answered == 0 {
		t.Error("nothing was answered")
	}
	seen := map[string]bool{}
	for _, f := range res.Faults {
		if f.Err != "" {
			t.Errorf("fault %s did not complete: %s", f.Kind, f.Err)
		}
		seen[f.Kind] = true
	}
	for _, k := range soakFaultKinds("single") {
		if k == "disk-full" && res.DiskSkipped != "" {
			continue
		}
		if !seen[k] {
			t.Errorf("fault %s never injected", k)
		}
	}
}

// keepLogs copies the gateway's log into the test output on failure.
func keepLogs(t *testing.T, work string) {
	b, err := os.ReadFile(filepath.Join(work, "logs", "gateway.log"))
	if err != nil {
		return
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) > 200 {
		lines = lines[len(lines)-200:]
	}
	t.Logf("last lines of the gateway's log:\n%s", strings.Join(lines, "\n"))
}

// testLog writes the driver's log lines into the test's.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestSoakSection: -out adds the section once and replaces only its mode's
// block; `go run ./bench` carries the whole section, notes included, into
// the page it writes.
func TestSoakSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	if err := os.WriteFile(path, []byte("# Benchmarks\n\n## Peers\n\nold\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(mode string, sent int) {
		r := &soakResult{Opts: soakOptions{Mode: mode, Workers: 2}, Started: time.Now(), Chats: []chatTally{{Chat: 1, Sent: sent, Answered: sent}}}
		if err := spliceSoak(path, r); err != nil {
			t.Fatal(err)
		}
	}
	run("single", 11)
	run("cluster", 22)
	run("single", 33)
	b, _ := os.ReadFile(path)
	page := string(b) + "\nnotes kept\n"
	for _, want := range []string{"33 chat messages sent", "22 chat messages sent", "## Peers"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "11 chat messages sent") || strings.Count(page, soakSectionTitle+"\n") != 1 {
		t.Errorf("the single block was not replaced, or the section added twice:\n%s", page)
	}
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := keepSection("# Benchmarks\n\n## Peers\n\nnew\n", path, soakSectionTitle)
	for _, want := range []string{"new", "33 chat messages sent", "22 chat messages sent", "notes kept"} {
		if !strings.Contains(fresh, want) {
			t.Errorf("rewritten page lacks %q:\n%s", want, fresh)
		}
	}
}

// raceBinary builds nanobot with -race into work: the gateway's own races
// show in the smoke runs; the suite has compiled every package with -race
// already, so this mostly links.
func raceBinary(t *testing.T, work string) string {
	t.Helper()
	bin := filepath.Join(work, "nanobot")
	build := exec.Command("go", "build", "-race", "-tags", "goolm", "-o", bin, "./cmd/nanobot")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
