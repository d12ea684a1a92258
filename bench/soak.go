package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// soakOptions shape one chaos soak (`go run ./bench soak`).
type soakOptions struct {
	// Duration is the send phase: users write and faults are injected.
	Duration time.Duration
	// Drain is the most the driver then waits, faults stopped, for every
	// message to be answered or otherwise settled before it counts.
	Drain time.Duration
	// Chats is how many Telegram chats write; APIClients how many clients
	// of /v1/chat/completions ask at the same time.
	Chats, APIClients int
	// Seed fixes every actor's random choices (not the interleaving).
	Seed uint64
	// Mode is "single" (one gateway) or "cluster" (a channels process and
	// Workers workers over an embedded NATS JetStream).
	Mode    string
	Workers int
	// FaultEvery is the mean gap between two faults of the injector.
	FaultEvery time.Duration
	// ModelFaults is the share of model requests that fail or stall.
	ModelFaults float64
	// MaxFault caps how long one outage, rate limit, full disk or process
	// down time lasts (default 12 s; the smoke test uses less, so that a
	// short run sees every kind).
	MaxFault time.Duration
	// Faults, when not empty, limits the injector to these kinds.
	Faults []string
	// Sample is how often each process's resources are read; Warmup how
	// long after its start a process's readings are left out of the trend.
	Sample, Warmup time.Duration
	// Bin is a prebuilt binary (built when empty); Work the folder for the
	// run (a temporary one when empty, removed unless Keep).
	Bin, Work string
	Keep      bool
	Log       *log.Logger
}

func defaultSoakOptions() soakOptions {
	return soakOptions{Duration: 10 * time.Minute, Drain: 4 * time.Minute, Chats: 20, APIClients: 2, Mode: "single", Workers: 2,
		FaultEvery: 15 * time.Second, ModelFaults: 0.08, MaxFault: 12 * time.Second, Sample: 5 * time.Second, Warmup: 20 * time.Second}
}

// soakFaultKinds are the injector's faults in a mode.
func soakFaultKinds(mode string) []string {
	kinds := []string{"kill-9", "outage", "429", "stop", "disk-full"}
	if mode == "cluster" {
		kinds = append(kinds, "worker-kill", "nats-restart")
	}
	return kinds
}

func (o soakOptions) check() error {
	var bad []string
	if o.Duration < 10*time.Second || o.Duration > 4*time.Hour {
		bad = append(bad, "-duration: want 10s to 4h")
	}
	if o.Drain < 10*time.Second || o.Drain > 30*time.Minute {
		bad = append(bad, "-drain: want 10s to 30m")
	}
	if o.Chats < 1 || o.Chats > 500 {
		bad = append(bad, "-chats: want 1 to 500")
	}
	if o.APIClients < 0 || o.APIClients > 50 {
		bad = append(bad, "-api: want 0 to 50")
	}
	if o.Mode != "single" && o.Mode != "cluster" {
		bad = append(bad, "-mode: want single or cluster")
	}
	if o.Workers < 1 || o.Workers > 8 {
		bad = append(bad, "-workers: want 1 to 8")
	}
	if o.FaultEvery < time.Second {
		bad = append(bad, "-fault-every: want at least 1s")
	}
	if o.MaxFault < time.Second || o.MaxFault > 5*time.Minute {
		bad = append(bad, "-max-fault: want 1s to 5m")
	}
	if o.ModelFaults < 0 || o.ModelFaults > 0.5 {
		bad = append(bad, "-model-faults: want 0 to 0.5")
	}
	for _, f := range o.Faults {
		if !slices.Contains(soakFaultKinds(o.Mode), f) {
			bad = append(bad, fmt.Sprintf("-faults: %q is not a fault of mode %s (%s)", f, o.Mode, strings.Join(soakFaultKinds(o.Mode), ", ")))
		}
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// soakMain is `go run ./bench soak [flags]`.
func soakMain(args []string) error {
	o := defaultSoakOptions()
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.DurationVar(&o.Duration, "duration", o.Duration, "send phase: users write and faults are injected (10s to 4h)")
	fs.DurationVar(&o.Drain, "drain", o.Drain, "the most to wait afterwards, faults stopped, for every message to settle")
	fs.IntVar(&o.Chats, "chats", o.Chats, "Telegram chats writing at once")
	fs.IntVar(&o.APIClients, "api", o.APIClients, "clients of /v1/chat/completions asking at once")
	seed := fs.Uint64("seed", 0, "seed of the random choices (0: from the clock; printed)")
	fs.StringVar(&o.Mode, "mode", o.Mode, "single (one gateway) or cluster (channels + workers over NATS JetStream)")
	fs.IntVar(&o.Workers, "workers", o.Workers, "workers in cluster mode")
	fs.DurationVar(&o.FaultEvery, "fault-every", o.FaultEvery, "mean gap between two injected faults")
	fs.DurationVar(&o.MaxFault, "max-fault", o.MaxFault, "the longest one outage, rate limit, full disk or process down time lasts")
	fs.Float64Var(&o.ModelFaults, "model-faults", o.ModelFaults, "share of model requests that fail or stall")
	faults := fs.String("faults", "", "only these faults, comma-separated (default all of the mode: "+strings.Join(soakFaultKinds("cluster"), ", ")+")")
	fs.DurationVar(&o.Sample, "sample", o.Sample, "how often each process's goroutines, open files and RSS are read")
	fs.StringVar(&o.Bin, "bin", "", "a prebuilt nanobot binary (default: build one)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the run's folder (logs, state) and print where it is")
	out := fs.String("out", "", "also write the result into this page's \"Chaos soak\" section (e.g. docs/benchmarks.md)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.Seed = *seed
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	if *faults != "" {
		for _, f := range strings.Split(*faults, ",") {
			o.Faults = append(o.Faults, strings.TrimSpace(f))
		}
	}
	if err := o.check(); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join("cmd", "nanobot")); err != nil && o.Bin == "" {
		return fmt.Errorf("run from the repository root: %w", err)
	}
	o.Log = log.New(os.Stderr, "soak ", log.Ltime)
	res, err := runSoak(context.Background(), o)
	if err != nil {
		return err
	}
	fmt.Print(res.markdown())
	if *out != "" {
		if err := spliceSoak(*out, res); err != nil {
			return err
		}
		o.Log.Printf("wrote the %s run into %s", o.Mode, *out)
	}
	if v := res.verdict(); !v.Pass {
		return fmt.Errorf("verdict FAIL: %s", strings.Join(v.Why, "; "))
	}
	return nil
}

// faultEvent is one fault the driver injected.
type faultEvent struct {
	Kind       string
	At, End    time.Time
	Detail     string
	Err        string
	Concurrent bool // model faults and hang stops run beside the injector
}

// soakResult is everything one soak measured.
type soakResult struct {
	Opts                  soakOptions
	Machine               string
	LoadBefore, LoadAfter string
	Started               time.Time
	SendPhase, Drain      time.Duration
	Settled               bool

	Chats    []chatTally
	API      []apiTally
	Dups     []duplicate
	Problems []string
	Others   map[string]int

	Faults                   []faultEvent
	ModelFaults              map[string]int
	ModelRequests            int
	PlatformCut, Platform429 int
	DiskSkipped              string
	Samples                  []resSample
	Runs                     map[string]int // starts per process
	// LogProblems are data races and panics found in the processes' logs.
	LogProblems []string
	Work        string
}

// soakUsers sends as the soak's Telegram users.
type soakUsers struct{ tg *telegramtest.Server }

func (u soakUsers) sender(chat int64) func(string) {
	user := telegramtest.User{ID: chat, Username: fmt.Sprint("soak", chat), FirstName: "Soak"}
	return func(text string) {
		u.tg.Send(telegramtest.Msg{From: user, Chat: telegramtest.Chat{ID: chat, Type: "private"}, Text: text})
	}
}

// runSoak runs one soak: the send phase with faults, then the drain, then
// the count.
func runSoak(ctx context.Context, o soakOptions) (res *soakResult, err error) {
	lg := o.Log
	if lg == nil {
		lg = log.New(io.Discard, "", 0)
	}
	work := o.Work
	if work == "" {
		if work, err = os.MkdirTemp("", "nanobot-soak-"); err != nil {
			return nil, err
		}
		if !o.Keep {
			defer os.RemoveAll(work)
		}
	}
	res = &soakResult{Opts: o, Machine: describeMachine(), LoadBefore: loadAverage(), Started: time.Now(), Runs: map[string]int{}, Work: work}
	bin := o.Bin
	if bin == "" {
		lg.Print("building the binary")
		if bin, _, err = buildBinary(work); err != nil {
			return nil, err
		}
	}
	seeds := rand.New(rand.NewPCG(o.Seed, 0x50a4))

	t := &tb{}
	defer t.close()
	llm := providertest.New(t)
	llm.SetRecording(false)
	tg := telegramtest.New(t)
	model := newSoakModel(seeds.Uint64(), o.ModelFaults, soakIdleTimeout)
	llm.Handle(model.reply)
	proxy, err := newPlatformProxy(tg.URL)
	if err != nil {
		return nil, err
	}
	defer proxy.close()

	kinds := o.Faults
	if len(kinds) == 0 {
		kinds = soakFaultKinds(o.Mode)
	}
	var ns *natsServer
	natsURL := ""
	if o.Mode == "cluster" {
		if ns, err = startNATS(filepath.Join(work, "nats")); err != nil {
			return nil, err
		}
		defer ns.stop()
		natsURL = ns.URL()
	}
	home := filepath.Join(work, "home")
	var disk *scratchDisk
	if slices.Contains(kinds, "disk-full") {
		if disk, err = mountScratch(home, 512<<20); err != nil {
			res.DiskSkipped = "cannot mount tmpfs: " + err.Error()
			lg.Printf("disk-full: skipped (%s)", res.DiskSkipped)
			kinds = slices.DeleteFunc(slices.Clone(kinds), func(k string) bool { return k == "disk-full" })
			disk = nil
		} else {
			defer func() {
				if err := disk.unmount(); err != nil {
					lg.Printf("unmount %s: %v", home, err)
				}
			}()
		}
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	cfg := filepath.Join(home, "config.json")
	if err := writeSoakConfig(cfg, llm.OpenAIBase(), proxy.URL(), natsURL); err != nil {
		return nil, err
	}
	logs := filepath.Join(work, "logs")
	if err := os.MkdirAll(logs, 0o700); err != nil {
		return nil, err
	}
	procs, err := soakProcs(o.Mode, o.Workers, bin, cfg, home, logs, lg)
	if err != nil {
		return nil, err
	}
	for _, p := range procs {
		defer p.stop()
	}
	for _, p := range procs {
		if err := p.start(ctx); err != nil {
			return nil, err
		}
	}
	lg.Printf("%s mode: %d processes up; %d chats, %d API clients for %s, then a drain of up to %s; seed %d; work %s",
		o.Mode, len(procs), o.Chats, o.APIClients, o.Duration, o.Drain, o.Seed, work)

	ids := make([]int64, o.Chats)
	for i := range ids {
		ids[i] = int64(1001 + i)
	}
	led := newSoakLedger(ids, res.Started)
	users := soakUsers{tg}

	// The follower reads what the bot sent, in order.
	folDone := make(chan struct{})
	folCtx, stopFollower := context.WithCancel(context.Background())
	defer func() { stopFollower(); <-folDone }()
	go func() {
		defer close(folDone)
		_, n := tg.SentSince(1 << 62)
		for {
			var sent []telegramtest.Sent
			sent, n = tg.SentSince(n)
			led.observe(sent)
			if !sleepCtx(folCtx, 50*time.Millisecond) {
				sent, _ = tg.SentSince(n)
				led.observe(sent)
				return
			}
		}
	}()

	// The sampler reads every process's resources.
	var smu sync.Mutex
	sampCtx, stopSampler := context.WithCancel(context.Background())
	sampDone := make(chan struct{})
	defer func() { stopSampler(); <-sampDone }()
	go func() {
		defer close(sampDone)
		for sleepCtx(sampCtx, o.Sample) {
			for _, p := range procs {
				if s, ok := p.sample(sampCtx); ok {
					smu.Lock()
					res.Samples = append(res.Samples, s)
					smu.Unlock()
				}
			}
		}
	}()

	inj := &injector{kinds: kinds, rng: rand.New(rand.NewPCG(seeds.Uint64(), 1)), every: o.FaultEvery, longest: o.MaxFault, procs: procs,
		proxy: proxy, model: model, disk: disk, nats: ns, led: led, users: users, ids: ids, log: lg, start: res.Started}

	// A stream the model hangs gets a /stop from its user.
	hangCtx, stopHangs := context.WithCancel(context.Background())
	hangDone := make(chan struct{})
	defer func() { stopHangs(); <-hangDone }()
	hangRng := rand.New(rand.NewPCG(seeds.Uint64(), 2))
	go func() {
		defer close(hangDone)
		rng := hangRng
		for {
			select {
			case <-hangCtx.Done():
				return
			case chat := <-model.hangs:
				if sleepCtx(hangCtx, time.Duration(300+rng.IntN(1200))*time.Millisecond) && led.sendStop(chat, users.sender(chat)) {
					inj.record(faultEvent{Kind: "stop (hung answer)", At: time.Now(), End: time.Now(), Detail: fmt.Sprint("chat ", chat), Concurrent: true})
				}
			}
		}
	}()

	sendCtx, endSend := context.WithTimeout(ctx, o.Duration)
	defer endSend()
	model.setFaults(true)
	var wg sync.WaitGroup
	for _, id := range ids {
		rng := rand.New(rand.NewPCG(seeds.Uint64(), uint64(id)))
		send := users.sender(id)
		wg.Go(func() {
			for sleepCtx(sendCtx, time.Duration(300+rng.IntN(2700))*time.Millisecond) {
				if led.waiting(id) < 3 {
					led.sendQuestion(id, send)
				}
			}
		})
	}
	var clients []*apiClient
	for i := range o.APIClients {
		a := &apiClient{id: i + 1, addr: procs[0].addr, rng: rand.New(rand.NewPCG(seeds.Uint64(), uint64(i))), leave: 0.4}
		clients = append(clients, a)
		wg.Go(func() { a.run(sendCtx) })
	}
	wg.Go(func() { inj.run(sendCtx) })
	progress := time.NewTicker(time.Minute)
	defer progress.Stop()
	for sendCtx.Err() == nil {
		select {
		case <-sendCtx.Done():
		case <-progress.C:
			lg.Print(soakProgress(led.tally(), inj.events()))
		}
	}
	wg.Wait()
	res.SendPhase = time.Since(res.Started)

	// Drain: every fault off, every process up, until all is settled.
	model.setFaults(false)
	proxy.setDown(false)
	proxy.setLimited(0)
	for _, p := range procs {
		if _, _, ok := p.running(); !ok {
			lg.Printf("%s is down after the send phase: starting it", p.name)
			if err := p.start(ctx); err != nil {
				return nil, err
			}
		}
	}
	lg.Printf("send phase over (%s): draining", res.SendPhase.Round(time.Second))
	drainStart := time.Now()
	var settledAt time.Time
	for time.Since(drainStart) < o.Drain {
		pending := 0
		for _, c := range led.tally() {
			pending += c.Lost + c.StopsLost
		}
		if pending > 0 {
			settledAt = time.Time{}
		} else if settledAt.IsZero() {
			settledAt = time.Now()
		} else if time.Since(settledAt) >= 5*time.Second {
			// A few seconds more for a late duplicate.
			res.Settled = true
			break
		}
		if !sleepCtx(ctx, time.Second) {
			break
		}
	}
	res.Drain = time.Since(drainStart)
	stopHangs()
	<-hangDone
	stopSampler()
	<-sampDone
	for _, p := range procs {
		if s, ok := p.sample(context.Background()); ok {
			res.Samples = append(res.Samples, s)
		}
	}
	stopFollower()
	<-folDone

	res.Chats = led.tally()
	for _, a := range clients {
		res.API = append(res.API, a.tally())
	}
	res.Dups = led.duplicates()
	res.Problems = led.problems()
	res.Others = led.others()
	res.Faults = inj.events()
	res.ModelFaults, res.ModelRequests = model.faultCounts()
	res.PlatformCut, res.Platform429 = proxy.counts()
	for _, p := range procs {
		p.mu.Lock()
		res.Runs[p.name] = p.runs
		p.mu.Unlock()
	}
	for _, p := range procs {
		res.LogProblems = append(res.LogProblems, scanLog(p.logs, p.name)...)
	}
	res.LoadAfter = loadAverage()
	if o.Keep {
		lg.Printf("logs and state kept in %s", work)
	}
	return res, nil
}

// soakProgress is the one-line state of a run in progress.
func soakProgress(chats []chatTally, faults []faultEvent) string {
	var sent, answered, pending, dups int
	for _, c := range chats {
		sent += c.Sent
		answered += c.Answered
		pending += c.Lost
		dups += c.Duplicates
	}
	return fmt.Sprintf("sent %d, answered %d, waiting %d, duplicates %d; %d faults so far", sent, answered, pending, dups, len(faults))
}

// injector injects the faults of a mode one after another, in rounds that
// each hold every kind once in a random order, with random gaps.
type injector struct {
	kinds []string
	rng   *rand.Rand
	every time.Duration
	// longest caps every duration the injector draws.
	longest time.Duration
	procs   []*soakProc
	proxy   *platformProxy
	model   *soakModel
	disk    *scratchDisk
	nats    *natsServer
	led     *soakLedger
	users   soakUsers
	ids     []int64
	log     *log.Logger
	start   time.Time // the run's, for offsets in the log

	mu  sync.Mutex
	evs []faultEvent
}

func (in *injector) record(e faultEvent) {
	in.mu.Lock()
	in.evs = append(in.evs, e)
	in.mu.Unlock()
}

func (in *injector) events() []faultEvent {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.evs)
}

func (in *injector) run(ctx context.Context) {
	for {
		round := slices.Clone(in.kinds)
		in.rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		for _, k := range round {
			gap := time.Duration(float64(in.every) * (0.5 + in.rng.Float64()))
			if !sleepCtx(ctx, gap) {
				return
			}
			e := faultEvent{Kind: k, At: time.Now()}
			e.Detail, e.Err = in.inject(k)
			e.End = time.Now()
			in.log.Printf("fault %s at %.1fs for %s: %s %s", k, e.At.Sub(in.start).Seconds(), e.End.Sub(e.At).Round(100*time.Millisecond), e.Detail, e.Err)
			in.record(e)
		}
	}
}

// between is a random duration in [lo, hi], both capped by longest.
func (in *injector) between(lo, hi time.Duration) time.Duration {
	hi = min(hi, in.longest)
	lo = min(lo, hi)
	return lo + time.Duration(in.rng.Int64N(int64(hi-lo)+1))
}

// inject runs one fault to its end; it returns what it did and what went
// wrong (a process that would not start again).
func (in *injector) inject(kind string) (detail, problem string) {
	switch kind {
	case "kill-9", "worker-kill":
		p := in.procs[0] // the gateway, or the channels process
		if kind == "worker-kill" {
			p = in.procs[1+in.rng.IntN(len(in.procs)-1)]
		}
		p.kill9()
		down := in.between(200*time.Millisecond, 3*time.Second)
		if kind == "worker-kill" {
			down = in.between(time.Second, 8*time.Second)
		}
		time.Sleep(down)
		start := time.Now()
		if err := p.start(context.Background()); err != nil {
			return p.name, err.Error()
		}
		return fmt.Sprintf("%s down %s, ready %s after its start", p.name, down.Round(time.Millisecond*100), time.Since(start).Round(time.Millisecond*100)), ""
	case "nats-restart":
		in.nats.stop()
		down := in.between(time.Second, 5*time.Second)
		time.Sleep(down)
		if err := in.nats.start(); err != nil {
			return "", err.Error()
		}
		return fmt.Sprintf("down %s", down.Round(time.Millisecond*100)), ""
	case "outage":
		d := in.between(2*time.Second, 12*time.Second)
		in.proxy.setDown(true)
		time.Sleep(d)
		in.proxy.setDown(false)
		return fmt.Sprintf("%s", d.Round(time.Millisecond*100)), ""
	case "429":
		d, ra := in.between(3*time.Second, 12*time.Second), 1+in.rng.IntN(4)
		in.proxy.setLimited(ra)
		time.Sleep(d)
		in.proxy.setLimited(0)
		return fmt.Sprintf("%s, retry after %d s", d.Round(time.Millisecond*100), ra), ""
	case "stop":
		busy := in.model.busyChats()
		slices.Sort(busy)
		chat := int64(0)
		if len(busy) > 0 {
			chat = busy[in.rng.IntN(len(busy))]
		} else {
			for _, i := range in.rng.Perm(len(in.ids)) {
				if in.led.waiting(in.ids[i]) > 0 {
					chat = in.ids[i]
					break
				}
			}
		}
		if chat == 0 {
			return "no turn running", ""
		}
		if !in.led.sendStop(chat, in.users.sender(chat)) {
			return fmt.Sprintf("chat %d: a /stop still waits there", chat), ""
		}
		return fmt.Sprintf("chat %d (answer streaming: %t)", chat, len(busy) > 0), ""
	case "disk-full":
		d := in.between(4*time.Second, 12*time.Second)
		if err := in.disk.fill(); err != nil {
			_ = in.disk.free()
			return "", err.Error()
		}
		time.Sleep(d)
		if err := in.disk.free(); err != nil {
			return "", err.Error()
		}
		return fmt.Sprintf("%s", d.Round(time.Millisecond*100)), ""
	}
	return "", "unknown fault " + kind
}

// scanLog finds the lines of a process's log that no run may have: a
// panic or a data race (when the binary was built with -race).
func scanLog(path, name string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return []string{fmt.Sprintf("%s: read log: %v", name, err)}
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") || strings.Contains(line, "WARNING: DATA RACE") {
			out = append(out, fmt.Sprintf("%s: %s", name, clip(line, 200)))
		}
	}
	return out
}
