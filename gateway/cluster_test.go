package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/cron"
	"github.com/nanobot-go/nanobot/gateway/natsbus/natstest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
)

// probe is a scripted LLM shared by the workers of a test. It answers
// "echo: <text>" after a fixed latency and records, per session, which
// worker runs it: two workers on one session at once is a violation, and
// so is a session's messages processed out of order. A message whose text
// is hold blocks until its turn is cancelled (a worker killed mid-turn).
type probe struct {
	latency time.Duration
	hold    string

	mu         sync.Mutex
	active     map[string]string   // session -> worker running it
	processed  map[string][]int    // session -> message numbers, in processing order
	byWorker   map[string]int      // worker -> turns
	violations []string            // overlaps and reorderings
	held       chan string         // worker that started the hold message
	heldBy     map[string]struct{} // workers that got it
}

func newProbe(latency time.Duration) *probe {
	return &probe{latency: latency, active: map[string]string{}, processed: map[string][]int{},
		byWorker: map[string]int{}, held: make(chan string, 8), heldBy: map[string]struct{}{}}
}

// worker returns the provider of one worker.
func (p *probe) worker(name string) providers.Provider { return probeWorker{p, name} }

type probeWorker struct {
	p    *probe
	name string
}

func (w probeWorker) Chat(ctx context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	return w.Stream(ctx, req, func(providers.Delta) {})
}

func (w probeWorker) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	u := req.Messages[len(req.Messages)-1].Text()
	body := u[strings.LastIndex(u, "\n")+1:]
	sess, num, _ := strings.Cut(body, " ")
	p := w.p
	p.mu.Lock()
	if other, busy := p.active[sess]; busy {
		p.violations = append(p.violations, fmt.Sprintf("%s processed by %s and %s at once", sess, other, w.name))
	}
	p.active[sess] = w.name
	if n, err := strconv.Atoi(num); err == nil {
		// A replay of the last message (after a worker died) is fine.
		if prev := p.processed[sess]; len(prev) > 0 && prev[len(prev)-1] > n {
			p.violations = append(p.violations, fmt.Sprintf("%s: message %d after %d", sess, n, prev[len(prev)-1]))
		}
		p.processed[sess] = append(p.processed[sess], n)
	}
	p.byWorker[w.name]++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		if p.active[sess] == w.name {
			delete(p.active, sess)
		}
		p.mu.Unlock()
	}()
	if p.hold != "" && body == p.hold {
		p.mu.Lock()
		_, again := p.heldBy[w.name]
		p.heldBy[w.name] = struct{}{}
		first := len(p.heldBy) == 1 && !again
		p.mu.Unlock()
		if first {
			p.held <- w.name
			<-ctx.Done()
			return nil, ctx.Err()
		}
	}
	t := time.NewTimer(p.latency)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		return nil, ctx.Err()
	}
	reply := "echo: " + body
	onDelta(providers.Delta{Content: reply})
	return &providers.LLMResponse{Content: reply, FinishReason: "stop"}, nil
}

func (p *probe) check(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, v := range p.violations {
		t.Error(v)
	}
}

// cluster runs gateway instances of one bot against one NATS server.
type cluster struct {
	t   testing.TB
	srv *natstest.Server
	// ttl is cluster.leaseTtlS: 1 s by default, so that tests of a dead
	// instance's hand-over are quick. Under -race on a loaded machine a
	// worker can miss renewals for 2/3 s and rightly give its partitions
	// up mid-turn (a replayed turn re-streams what the user already saw),
	// so tests that count replies exactly and kill nobody use more.
	ttl int
}

func newCluster(t testing.TB) *cluster { return &cluster{t: t, srv: natstest.Start(t)} }

func (c *cluster) config() configs.Config {
	cfg := testConfig(map[string][]any{"fake": {"*"}})
	cfg.Channels.Platforms["web"] = map[string]any{"enabled": false}
	cfg.Cluster.NATS.URL = c.srv.URL()
	cfg.Cluster.LeaseTTLS, cfg.Cluster.AckWaitS, cfg.Cluster.Partitions = max(c.ttl, 1), 2, 12
	return cfg
}

// start runs one instance; the returned running's cancel kills it.
func (c *cluster) start(role, name string, llm providers.Provider, extra ...channels.Channel) *running {
	return startGatewayOpts(c.t, c.config(), llm, func(o *Options) {
		o.Role, o.Instance, o.DrainTimeout = role, name, 50*time.Millisecond
		if os.Getenv("NANOBOT_TEST_LOG") != "" {
			o.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("inst", name)
		}
	}, extra...)
}

func stop(t *testing.T, r *running) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("instance stopped with %v", err)
		}
		r.done <- nil // for the cleanup
	case <-time.After(15 * time.Second):
		t.Fatal("instance did not stop")
	}
}

func platform(name string) *fakeChannel {
	fc := newFake(name)
	fc.in = make(chan bus.Inbound, 1024)
	fc.redeliver = true
	fc.front = make(chan bus.Inbound, 4)
	return fc
}

// replies returns what the platform shows in a chat, over every channels
// instance that ever served it.
func replies(chat string, fakes ...*fakeChannel) []string {
	var out []string
	for _, f := range fakes {
		out = append(out, f.texts(chat)...)
	}
	return out
}

func wantReplies(chat string, n int) []string {
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("echo: %s %d", chat, i))
	}
	return want
}

// Three workers and one channels instance: 200 messages over 50 sessions
// are all answered once, in order, and no session ever runs on two
// workers at once — while the workers are still sharing out the
// partitions among themselves.
func TestClusterThreeWorkers(t *testing.T) {
	c := newCluster(t)
	c.ttl = 5
	llm := newProbe(5 * time.Millisecond)
	fc := platform("fake")
	c.start(RoleChannels, "channels-1", llm.worker("channels-1"), fc)
	var workers []*running
	for i := range 3 {
		name := fmt.Sprint("worker-", i+1)
		workers = append(workers, c.start(RoleWorker, name, llm.worker(name)))
	}
	w1 := workers[0]
	// The first worker takes every partition and hands some back as the
	// others join (a round every leaseTtlS/3): send once each owns some,
	// or the first may answer everything before the others have a share.
	waitfor.Within(t, "every worker owns partitions", 30*time.Second, func() bool {
		for _, w := range workers {
			var st Status
			if _, body := get(t, "http://"+w.addr+"/api/status"); json.Unmarshal([]byte(body), &st) != nil || st.Cluster == nil || len(st.Cluster.Owned) == 0 {
				return false
			}
		}
		return true
	})
	const sessions, each = 50, 4
	for i := range each {
		for s := range sessions {
			chat := fmt.Sprint("s", s)
			fc.in <- bus.Inbound{Channel: "fake", ChatID: chat, SenderID: "u", Content: fmt.Sprintf("%s %d", chat, i), MessageID: fmt.Sprint(s, "-", i)}
		}
	}
	waitfor.Within(t, "every message answered", 60*time.Second, func() bool {
		for s := range sessions {
			if len(fc.texts(fmt.Sprint("s", s))) < each {
				return false
			}
		}
		return true
	})
	for s := range sessions {
		chat := fmt.Sprint("s", s)
		if got, want := fc.texts(chat), wantReplies(chat, each); !slices.Equal(got, want) {
			t.Errorf("%s: replies %q, want %q", chat, got, want)
		}
	}
	llm.check(t)
	// /api/status (what `nanobot status` prints) shows the cluster.
	var st Status
	waitfor.Within(t, "status lists the four instances", 10*time.Second, func() bool {
		_, body := get(t, "http://"+w1.addr+"/api/status")
		st = Status{}
		return json.Unmarshal([]byte(body), &st) == nil && st.Cluster != nil && len(st.Cluster.Members) == 4
	})
	if st.Cluster.Role != RoleWorker || st.Cluster.Instance != "worker-1" || len(st.Cluster.Owned) == 0 {
		t.Errorf("cluster status %+v", st.Cluster)
	}
	if _, m := get(t, "http://"+w1.addr+"/metrics"); !strings.Contains(m, `nanobot_cluster_partitions_owned{instance="worker-1",role="worker"}`) {
		t.Errorf("metrics lack the cluster gauges:\n%s", grep(m, "nanobot_cluster"))
	}
	llm.mu.Lock()
	defer llm.mu.Unlock()
	busy := 0
	for _, n := range llm.byWorker {
		if n > 0 {
			busy++
		}
	}
	if busy < 2 {
		t.Errorf("turns per worker %v: the load was not shared", llm.byWorker)
	}
	t.Logf("turns per worker: %v", llm.byWorker)
}

// A worker killed mid-turn: its partitions move to the others, and the
// interrupted message is processed again and answered once.
func TestClusterWorkerKilledMidTurn(t *testing.T) {
	c := newCluster(t)
	llm := newProbe(5 * time.Millisecond)
	llm.hold = "victim 0"
	fc := platform("fake")
	channelsNode := c.start(RoleChannels, "channels-1", llm.worker("channels-1"), fc)
	workers := map[string]*running{}
	for i := range 3 {
		name := fmt.Sprint("worker-", i+1)
		workers[name] = c.start(RoleWorker, name, llm.worker(name))
	}
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "victim", SenderID: "u", Content: "victim 0", MessageID: "v0"}
	var holder string
	select {
	case holder = <-llm.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the turn never started")
	}
	// More work for the same session and others while the holder dies.
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "victim", SenderID: "u", Content: "victim 1", MessageID: "v1"}
	for s := range 10 {
		fc.in <- bus.Inbound{Channel: "fake", ChatID: fmt.Sprint("o", s), SenderID: "u", Content: fmt.Sprintf("o%d 0", s), MessageID: fmt.Sprint("o", s)}
	}
	stop(t, workers[holder])

	waitfor.Within(t, "interrupted message answered by another worker", 30*time.Second, func() bool {
		return len(fc.texts("victim")) >= 2
	})
	for s := range 10 {
		chat := fmt.Sprint("o", s)
		waitfor.Within(t, chat+" answered", 30*time.Second, func() bool { return len(fc.texts(chat)) >= 1 })
	}
	// A second answer could only come from a message still in a stream
	// (unacknowledged, so redelivered): wait until both are empty.
	waitDrained(t, channelsNode)
	if got, want := fc.texts("victim"), wantReplies("victim", 2); !slices.Equal(got, want) {
		t.Errorf("victim: replies %q, want %q (each answered once, in order)", got, want)
	}
	llm.mu.Lock()
	_, retried := llm.heldBy[holder]
	n := len(llm.heldBy)
	llm.mu.Unlock()
	if !retried || n < 2 {
		t.Errorf("the interrupted message was not run again on another worker: %v", llm.heldBy)
	}
	llm.check(t)
}

// The channels instance dies: the standby takes over within the lease
// time, and nothing the platform handed over is lost.
func TestClusterChannelsFailover(t *testing.T) {
	c := newCluster(t)
	llm := newProbe(20 * time.Millisecond)
	active, standby := platform("fake"), platform("fake")
	standby.in, standby.front = active.in, active.front // one platform, offered to whichever instance polls it
	first := c.start(RoleChannels, "channels-1", llm.worker("c1"), active)
	waitfor.Within(t, "first instance connected", 10*time.Second, func() bool { return active.runs.Load() == 1 })
	second := c.start(RoleChannels, "channels-2", llm.worker("c2"), standby)
	c.start(RoleWorker, "worker-1", llm.worker("worker-1"))
	c.start(RoleWorker, "worker-2", llm.worker("worker-2"))
	// The standby tries the lease every third of its TTL (±50 %): eight
	// refused attempts span more than a whole lease, in which it must stay
	// idle.
	waitfor.Within(t, "the standby tried the lease eight times", 20*time.Second, func() bool {
		_, m := get(t, "http://"+second.addr+"/metrics")
		return metricValue(m, "nanobot_cluster_channels_standby_attempts_total") >= 8
	})
	if standby.runs.Load() != 0 {
		t.Fatal("the standby connected to the platform while the first instance was alive")
	}
	const sessions, each = 10, 6
	send := func(i int) {
		for s := range sessions {
			chat := fmt.Sprint("s", s)
			active.in <- bus.Inbound{Channel: "fake", ChatID: chat, SenderID: "u", Content: fmt.Sprintf("%s %d", chat, i), MessageID: fmt.Sprint(s, "-", i)}
		}
	}
	for i := range each / 2 {
		send(i)
	}
	killed := time.Now()
	stop(t, first)
	waitfor.Within(t, "standby took over", 10*time.Second, func() bool { return standby.runs.Load() == 1 })
	if took := time.Since(killed); took > 3*time.Second {
		t.Errorf("takeover took %v with a 1 s lease", took)
	}
	for i := each / 2; i < each; i++ {
		send(i)
	}
	waitfor.Within(t, "every message answered", 60*time.Second, func() bool {
		for s := range sessions {
			if len(uniq(replies(fmt.Sprint("s", s), active, standby))) < each {
				return false
			}
		}
		return true
	})
	for s := range sessions {
		chat := fmt.Sprint("s", s)
		got := uniq(replies(chat, active, standby))
		if want := wantReplies(chat, each); !slices.Equal(got, want) {
			t.Errorf("%s: replies %q, want %q", chat, got, want)
		}
	}
	llm.check(t)
}

// uniq drops repeats (a reply sent by the dying instance and again by the
// standby is at-least-once delivery, not a lost or reordered message).
func uniq(texts []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range texts {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// NATS restarts mid-run: the instances reconnect and every message the
// platform handed over (so JetStream acknowledged) is answered.
func TestClusterNATSRestart(t *testing.T) {
	c := newCluster(t)
	llm := newProbe(20 * time.Millisecond)
	fc := platform("fake")
	c.start(RoleChannels, "channels-1", llm.worker("c1"), fc)
	c.start(RoleWorker, "worker-1", llm.worker("worker-1"))
	c.start(RoleWorker, "worker-2", llm.worker("worker-2"))
	const sessions, each = 10, 4
	send := func(i int) {
		for s := range sessions {
			chat := fmt.Sprint("s", s)
			fc.in <- bus.Inbound{Channel: "fake", ChatID: chat, SenderID: "u", Content: fmt.Sprintf("%s %d", chat, i), MessageID: fmt.Sprint(s, "-", i)}
		}
	}
	send(0)
	send(1)
	c.srv.Restart()
	send(2)
	send(3)
	waitfor.Within(t, "every message answered after the restart", 90*time.Second, func() bool {
		for s := range sessions {
			if len(uniq(fc.texts(fmt.Sprint("s", s)))) < each {
				return false
			}
		}
		return true
	})
	for s := range sessions {
		chat := fmt.Sprint("s", s)
		if got, want := uniq(fc.texts(chat)), wantReplies(chat, each); !slices.Equal(got, want) {
			t.Errorf("%s: replies %q, want %q", chat, got, want)
		}
	}
	llm.check(t)
}

// waitDrained waits until the cluster's inbound and outbound streams hold
// no message (work-queue streams: acknowledged messages are removed), as
// r's /api/status reports them.
func waitDrained(t *testing.T, r *running) {
	t.Helper()
	waitfor.Within(t, "the streams to drain", 30*time.Second, func() bool {
		resp, err := http.Get("http://" + r.addr + "/api/status")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st Status
		return json.NewDecoder(resp.Body).Decode(&st) == nil && st.Inbound == 0 && st.Outbound == 0
	})
}

// Cron jobs live in NATS: a job added through one worker's store (as its
// cron tool would) fires once, on whichever instance holds the cron lease,
// although every instance has a jobs.json of its own.
func TestClusterCronJobsShared(t *testing.T) {
	c := newCluster(t)
	llm := newProbe(time.Millisecond)
	fc := platform("fake")
	cronNode := c.start(RoleChannels, "channels-1", llm.worker("channels-1"), fc)
	storeA := cron.NewStore(filepath.Join(t.TempDir(), "cron", "jobs.json"))
	startGatewayOpts(t, c.config(), llm.worker("worker-1"), func(o *Options) {
		o.Role, o.Instance, o.DrainTimeout, o.CronStore = RoleWorker, "worker-1", 50*time.Millisecond, storeA
	})
	c.start(RoleWorker, "worker-2", llm.worker("worker-2"))
	if !strings.HasPrefix(storeA.Path(), "nats-kv:") {
		t.Fatalf("worker-1's cron store is %s, want the NATS bucket", storeA.Path())
	}
	now := time.Now()
	job := cron.Job{ID: "j1", Name: "ping", Enabled: true, CreatedAtMs: now.UnixMilli(),
		Schedule: cron.Schedule{Kind: cron.KindAt, AtMs: now.Add(300 * time.Millisecond).UnixMilli()},
		Payload:  cron.Payload{Kind: "agent_turn", Message: "cronchat 0", Deliver: true, Channel: "fake", To: "cronchat"}}
	if err := storeA.Add(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	waitfor.Within(t, "the job's reply", 20*time.Second, func() bool { return len(fc.texts("cronchat")) > 0 })
	waitfor.Within(t, "the job disabled after its one run", 10*time.Second, func() bool {
		list, err := storeA.Jobs(t.Context())
		return err == nil && len(list) == 1 && !list[0].Enabled && list[0].State.LastStatus == "ok"
	})
	// A second (wrong) firing would be a message in the streams or an
	// answer: wait until both streams are empty, then count.
	waitDrained(t, cronNode)
	if got := fc.texts("cronchat"); !slices.Equal(got, []string{"echo: cronchat 0"}) {
		t.Errorf("replies %q, want the job answered exactly once", got)
	}
}

// metricValue returns the value of the first sample of family name in a
// Prometheus text exposition (-1 when absent).
func metricValue(exposition, name string) float64 {
	for _, line := range strings.Split(exposition, "\n") {
		if !strings.HasPrefix(line, name) || len(line) <= len(name) || (line[len(name)] != ' ' && line[len(name)] != '{') {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			return v
		}
	}
	return -1
}

// A worker whose NATS is away says so on /readyz (its queues, sessions and
// leases live there), and is ready again once NATS is back.
func TestClusterReadyzFollowsNATS(t *testing.T) {
	c := newCluster(t)
	llm := newProbe(0)
	w := c.start(RoleWorker, "worker-1", llm.worker("worker-1"))
	readyz := func() (int, string) {
		resp, err := http.Get("http://" + w.addr + "/readyz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitfor.True(t, "the worker ready", func() bool { code, _ := readyz(); return code == 200 })
	c.srv.Stop()
	waitfor.Within(t, "/readyz to name NATS", 15*time.Second, func() bool {
		code, body := readyz()
		return code == 503 && strings.Contains(body, "nats: not connected")
	})
	// /api/status (what `nanobot status` shows, with a 2 s limit) answers
	// without waiting on NATS for every figure it cannot get.
	quick := &http.Client{Timeout: 3 * time.Second}
	resp, err := quick.Get("http://" + w.addr + "/api/status")
	if err != nil {
		t.Errorf("/api/status while NATS is away: %v", err)
	} else {
		resp.Body.Close()
	}
	c.srv.Restart()
	waitfor.Within(t, "the worker ready again", 30*time.Second, func() bool { code, _ := readyz(); return code == 200 })
}

// `nanobot cron` in cluster mode copies the local jobs into the empty
// bucket first, as the first gateway would: a job added from the command
// line before any gateway ran in cluster mode does not leave them behind.
func TestCronCommandCopiesTheLocalJobsFirst(t *testing.T) {
	c := newCluster(t)
	file := filepath.Join(t.TempDir(), "jobs.json")
	local := cron.NewStore(file)
	now := time.Now()
	seed := cron.Job{ID: "seed", Name: "seeded", Enabled: true, CreatedAtMs: now.UnixMilli(),
		Schedule: cron.Schedule{Kind: cron.KindEvery, EveryMs: time.Hour.Milliseconds()}, Payload: cron.Payload{Message: "seeded"}}
	if err := local.Add(t.Context(), seed); err != nil {
		t.Fatal(err)
	}
	cfg := c.config().Cluster
	store, closeFn, err := CronStore(t.Context(), cfg, file, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	cli := seed
	cli.ID, cli.Name = "cli", "from the command line"
	if err := store.Add(t.Context(), cli); err != nil {
		t.Fatal(err)
	}
	jobs, err := store.Jobs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range jobs {
		names = append(names, j.Name)
	}
	if slices.Sort(names); !slices.Equal(names, []string{"from the command line", "seeded"}) {
		t.Errorf("jobs in the bucket %q, want the local one and the new one", names)
	}
}
