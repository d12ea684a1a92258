// Command bench measures nanobot the way a user runs it and writes the
// results table in docs/benchmarks.md.
//
// It builds the real binary, starts `nanobot gateway` as a child process
// against local fakes that run inside this driver (a scripted LLM speaking
// the OpenAI wire format, and the Telegram, Slack and Discord fakes the
// adapters' tests use), and measures binary size, time to ready, idle
// memory, throughput and latency under concurrent chats, memory growth over
// many sessions, and prompt-prefix stability; then it runs the Go
// micro-benchmarks of the hot paths.
//
//	go run ./bench                 # full run, writes docs/benchmarks.md
//	go run ./bench -quick          # smoke run: checks the driver works; numbers meaningless
//	go run ./bench soak -duration 30m   # chaos soak (soak.go); -out docs/benchmarks.md
//	go run ./bench recall               # memory_search: recall@5, answers from memory, speed at 100,000 messages (recall.go)
//
// The reply section (issue 38) measures spawn → first reply and warm
// per-message latency; -baseline and -picoclaw add another build of ours
// and PicoClaw to it, measured in turns with ours. NANOBOT_BENCH_WRAP
// prefixes every gateway command (a profiler), NANOBOT_BENCH_TIMELINE=1
// logs each restart's Bot API calls against the time since the spawn, and
// NANOBOT_BENCH_KEEP=1 keeps the temporary folder with the gateways' logs.
//
// Only loopback is used. The gateway runs with HOME and its config in a
// temporary folder, so nothing touches the user's ~/.nanobot.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "soak" {
		if err := soakMain(os.Args[2:]); err != nil {
			log.SetFlags(log.Ltime)
			log.Fatalf("bench soak: %v", err)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "recall" {
		if err := recallMain(os.Args[2:]); err != nil {
			log.SetFlags(log.Ltime)
			log.Fatalf("bench recall: %v", err)
		}
		return
	}
	quick := flag.Bool("quick", false, "smoke mode: tiny loads and short waits (checks the driver, not the numbers)")
	out := flag.String("out", "", "where to write the results page (default docs/benchmarks.md; none in -quick mode)")
	idle := flag.Duration("idle", 60*time.Second, "how long the gateway idles before its memory is read")
	flag.IntVar(&growthTurns, "growth-turns", 6, "turns per session in the memory-growth run (20 reproduces the issue's full load, ~15 min here)")
	flag.StringVar(&profiles, "profiles", "", "save the gateway's heap profile at each memory reading of the growth run into this folder")
	flag.StringVar(&only, "only", "", "run only these sections, comma-separated (deps, reply, lean, startup, load, growth, prefix, micro); prints the page instead of writing it")
	flag.StringVar(&picoclawBin, "picoclaw", "", "a PicoClaw binary to measure beside ours in the reply section (built from sipeed/picoclaw)")
	flag.StringVar(&baselineBin, "baseline", "", "another nanobot binary (an earlier commit) to measure beside this one in the reply section")
	flag.StringVar(&baselineName, "baseline-name", "nanobot (baseline)", "the heading of the -baseline column")
	flag.Parse()
	log.SetFlags(log.Ltime)

	if err := run(*quick, *out, *idle); err != nil {
		log.Fatalf("bench: %v", err)
	}
}

func run(quick bool, out string, idle time.Duration) error {
	if quick {
		idle = 2 * time.Second
	}
	if out == "" && !quick && only == "" {
		out = filepath.Join("docs", "benchmarks.md")
	}
	if _, err := os.Stat(filepath.Join("cmd", "nanobot")); err != nil {
		return fmt.Errorf("run from the repository root: %w", err)
	}
	work, err := os.MkdirTemp("", "nanobot-bench-")
	if err != nil {
		return err
	}
	if os.Getenv("NANOBOT_BENCH_KEEP") == "" {
		defer os.RemoveAll(work)
	}

	r := &report{Quick: quick, Started: time.Now(), Machine: describeMachine(), LoadBefore: loadAverage()}
	fx := startFakes()
	defer fx.close()

	log.Print("building the binary")
	bin, size, err := buildBinary(work)
	if err != nil {
		return err
	}
	r.BinaryBytes = size
	log.Print("building the binary with every optional platform left out")
	slim, slimSize, err := buildSlimBinary(work)
	if err != nil {
		return err
	}
	r.SlimBinaryBytes = slimSize

	sections := []struct {
		name, title string
		run         func() error
	}{
		{"deps", "bytes per module", func() error { return measureDeps(r, work) }},
		{"lean", "issue 28: size, spawn to /healthz, early and idle memory, a burst", func() error { return measureLean(r, fx, bin, work, quick) }},
		{"reply", "issue 38: spawn to first reply, warm per-message latency", func() error { return measureReply(r, fx, bin, slim, work, quick) }},
		{"startup", "time to ready and idle memory, 4 channels", func() error { return measureStartup(r, fx, bin, work, idle) }},
		{"load", "throughput and latency", func() error { return measureLoad(r, fx, bin, work, quick) }},
		{"growth", "memory growth over sessions", func() error { return measureGrowth(r, fx, bin, work, quick) }},
		{"prefix", "prompt-prefix stability", func() error { return measurePrefix(r, fx, bin, work, quick) }},
		{"micro", "micro-benchmarks", func() error { return measureMicro(r, quick) }},
	}
	for _, s := range sections {
		if !selected(s.name) {
			continue
		}
		log.Print(s.title)
		if err := s.run(); err != nil {
			// The other sections still run and the page is still written,
			// saying which failed: one failure does not discard the rest.
			log.Printf("section %s failed: %v", s.name, err)
			r.Failed = append(r.Failed, fmt.Sprintf("%s: %v", s.name, err))
		}
	}
	r.Took = time.Since(r.Started)
	r.LoadAfter = loadAverage()

	var failed error
	if len(r.Failed) > 0 {
		failed = fmt.Errorf("sections failed: %s", strings.Join(r.Failed, "; "))
	}
	if only != "" {
		if failed != nil {
			return failed
		}
		var b strings.Builder
		w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
		r.replyMarkdown(w)
		r.leanMarkdown(w)
		r.depsMarkdown(w)
		r.residentMarkdown(w)
		fmt.Print(b.String())
		log.Printf("sections %s done in %s (page not checked or written)", only, r.Took.Round(time.Second))
		return nil
	}
	page := r.markdown()
	if out == "" {
		fmt.Print(page)
		if failed != nil {
			return failed
		}
		return r.check(quick)
	}
	page = keepSection(page, out, soakSectionTitle)
	page = keepSection(page, out, recallSectionTitle)
	if err := os.WriteFile(out, []byte(page), 0o644); err != nil {
		return err
	}
	log.Printf("wrote %s (%s)", out, r.Took.Round(time.Second))
	if failed != nil {
		return failed
	}
	return r.check(quick)
}

// only restricts the run to some sections (the -only flag).
var only string

// selected reports whether the section runs under -only.
func selected(name string) bool {
	if only == "" {
		return true
	}
	for _, s := range strings.Split(only, ",") {
		if strings.TrimSpace(s) == name {
			return true
		}
	}
	return false
}
