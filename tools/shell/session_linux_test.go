package shell

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// processGone reports whether pid has ended: no such process, or a zombie
// waiting for a parent that is not the test.
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) S ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

var pidsRe = regexp.MustCompile(`(leader|bg)=(\d+)`)

// pids returns the leader= and bg= pids a session printed.
func pids(t *testing.T, out string) []int {
	t.Helper()
	var ps []int
	for _, m := range pidsRe.FindAllStringSubmatch(out, -1) {
		p, _ := strconv.Atoi(m[2])
		ps = append(ps, p)
	}
	if len(ps) != 2 {
		t.Fatalf("want leader= and bg= in:\n%s", out)
	}
	for _, p := range ps {
		if processGone(p) {
			t.Fatalf("pid %d is not running before the test kills it", p)
		}
	}
	return ps
}

// The sessions whose pids a test reads run unconfined: inside the
// sandbox's PID namespace $$ is not the host's pid. The background job
// ignores SIGHUP, so the terminal's hang-up does not end it: only the
// process group's kill does.
const twoProcesses = "(trap '' HUP; exec sleep 1000) & echo bg=$! leader=$$ end; wait"

func TestSessionsCloseKillsEveryProcess(t *testing.T) {
	r := newSessionRig(t, Options{Sandbox: sandbox.ModeNone}, SessionOptions{})
	var all []int
	for _, key := range []string{"chat:1", "chat:2"} {
		ctx := in(key)
		id := r.start(t, ctx, twoProcesses)
		out := r.waitFor(t, ctx, id, "", "end\n")
		all = append(all, pids(t, out)...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Close waited for the leaders; their background children were killed
	// with their process groups (and are reaped by init).
	for _, p := range all {
		waitfor.True(t, "pid "+strconv.Itoa(p)+" to end", func() bool { return processGone(p) })
	}
}

func TestSessionTerminateKillsTheProcessGroup(t *testing.T) {
	r := newSessionRig(t, Options{Sandbox: sandbox.ModeNone}, SessionOptions{})
	ctx := in("chat:1")
	id := r.start(t, ctx, twoProcesses)
	ps := pids(t, r.waitFor(t, ctx, id, "", "end\n"))
	out := r.mustCall(t, ctx, "write_stdin", map[string]any{"session_id": id, "terminate": true})
	if !strings.Contains(out, "Session terminated.") || !strings.Contains(out, "Exit: signal: killed") {
		t.Errorf("terminate:\n%s", out)
	}
	for _, p := range ps {
		waitfor.True(t, "pid "+strconv.Itoa(p)+" to end", func() bool { return processGone(p) })
	}
}

// startReaper runs m.Run until the test ends.
func startReaper(t *testing.T, m *Sessions) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// The acceptance test: a PTY session survives 10 minutes of idle output
// and is reaped after its limit. The clock is moved by hand; the reaper
// really runs, every few milliseconds.
func TestSessionSurvivesIdleOutputAndIsReapedAfterItsLimit(t *testing.T) {
	clock := newFakeClock()
	r := newSessionRig(t, Options{Sandbox: sandbox.ModeNone}, SessionOptions{
		IdleTimeout: 30 * time.Minute, ReapInterval: 5 * time.Millisecond, Now: clock.Now,
	})
	startReaper(t, r.m)
	ctx := in("chat:1")
	id := r.start(t, ctx, "echo leader=$$ bg=$$ end; while :; do echo tick; sleep 0.02; done")
	out := r.waitFor(t, ctx, id, "", "tick\ntick\n")
	leader := pids(t, out)[0]
	s := r.m.lookup(id)

	// Ten minutes with output but no tool call: within the limit.
	clock.Advance(10 * time.Minute)
	r.m.reap() // the pass at +10m, certainly done before the check below
	if s.exited() || processGone(leader) {
		t.Fatal("the session was reaped after 10 idle minutes; the limit is 30")
	}
	out = r.mustCall(t, ctx, "list_exec_sessions", nil)
	if !strings.Contains(out, id+" | running | elapsed=10m0s | idle=10m0s | remaining=3h50m0s") {
		t.Errorf("list at +10m: %q", out)
	}
	// The list was a tool call, not a use of the session: idleness goes on.
	clock.Advance(20*time.Minute + time.Second)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the session was not reaped 30 minutes after its last use")
	}
	waitfor.True(t, "the session's shell to end", func() bool { return processGone(leader) })
	out, err := r.call(t, ctx, "write_stdin", map[string]any{"session_id": id})
	if !errors.Is(err, ErrSessionNotFound) || !strings.Contains(out, "idle limit is 30m0s") {
		t.Errorf("poll of the reaped session: %s", out)
	}
}

func TestSessionUseKeepsItAlive(t *testing.T) {
	clock := newFakeClock()
	r := newSessionRig(t, Options{}, SessionOptions{IdleTimeout: 30 * time.Minute, Now: clock.Now})
	ctx := in("chat:1")
	id := r.start(t, ctx, "cat")
	for range 3 {
		clock.Advance(20 * time.Minute)
		r.mustCall(t, ctx, "write_stdin", map[string]any{"session_id": id, "yield_time_ms": 0})
	}
	r.m.reap()
	if out := r.mustCall(t, ctx, "list_exec_sessions", nil); !strings.Contains(out, id+" | running | elapsed=1h0m0s | idle=0s") {
		t.Errorf("a session polled every 20 minutes: %q", out)
	}
}

func TestSessionLifetime(t *testing.T) {
	clock := newFakeClock()
	r := newSessionRig(t, Options{}, SessionOptions{IdleTimeout: 2 * time.Hour, MaxLifetime: time.Hour, Now: clock.Now})
	ctx := in("chat:1")
	id := r.start(t, ctx, "read x; echo started; cat")
	// exec's timeout shortens it.
	short := r.mustCall(t, ctx, "exec", map[string]any{"command": "cat", "yield_time_ms": 0, "timeout": 60})
	shortID := sessionIDRe.FindStringSubmatch(short)[1]
	clock.Advance(61 * time.Second)
	r.m.reap()
	out, err := r.call(t, ctx, "write_stdin", map[string]any{"session_id": shortID, "yield_time_ms": 10000})
	if err == nil || !strings.Contains(out, "lifetime of 1m0s") || !strings.Contains(out, "Exit: signal: killed") {
		t.Errorf("a session past its 60s timeout: %v\n%s", err, out)
	}
	if out := r.mustCall(t, ctx, "list_exec_sessions", nil); !strings.Contains(out, id+" | running") {
		t.Errorf("the other session: %q", out)
	}
	// Typed past the tool, whose poll would take the output the end
	// notice below must still carry.
	s := r.m.lookup(id)
	if _, err := s.write("\n"); err != nil {
		t.Fatal(err)
	}
	waitfor.True(t, "the session to print", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return strings.Contains(s.out.text(), "started")
	})
	clock.Advance(time.Hour)
	r.m.reap()
	out, err = r.call(t, ctx, "write_stdin", map[string]any{"session_id": id, "yield_time_ms": 10000})
	if err == nil || !strings.HasPrefix(out, "\nstarted\n") && !strings.HasPrefix(out, "started\n") || !strings.Contains(out, "lifetime of 1h0m0s") {
		t.Errorf("a session past the 1h lifetime: %v\n%s", err, out)
	}
}
