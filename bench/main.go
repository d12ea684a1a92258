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
	"time"
)

func main() {
	quick := flag.Bool("quick", false, "smoke mode: tiny loads and short waits (checks the driver, not the numbers)")
	out := flag.String("out", "", "where to write the results page (default docs/benchmarks.md; none in -quick mode)")
	idle := flag.Duration("idle", 60*time.Second, "how long the gateway idles before its memory is read")
	flag.IntVar(&growthTurns, "growth-turns", 6, "turns per session in the memory-growth run (20 reproduces the issue's full load, ~15 min here)")
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
	if out == "" && !quick {
		out = filepath.Join("docs", "benchmarks.md")
	}
	if _, err := os.Stat(filepath.Join("cmd", "nanobot")); err != nil {
		return fmt.Errorf("run from the repository root: %w", err)
	}
	work, err := os.MkdirTemp("", "nanobot-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	r := &report{Quick: quick, Started: time.Now(), Machine: describeMachine()}
	fx := startFakes()
	defer fx.close()

	log.Print("building the binary")
	bin, size, err := buildBinary(work)
	if err != nil {
		return err
	}
	r.BinaryBytes = size

	log.Print("time to ready and idle memory, 4 channels")
	if err := measureStartup(r, fx, bin, work, idle); err != nil {
		return fmt.Errorf("startup: %w", err)
	}

	log.Print("throughput and latency")
	if err := measureLoad(r, fx, bin, work, quick); err != nil {
		return fmt.Errorf("load: %w", err)
	}

	log.Print("memory growth over sessions")
	if err := measureGrowth(r, fx, bin, work, quick); err != nil {
		return fmt.Errorf("growth: %w", err)
	}

	log.Print("prompt-prefix stability")
	if err := measurePrefix(r, fx, bin, work, quick); err != nil {
		return fmt.Errorf("prefix: %w", err)
	}

	log.Print("micro-benchmarks")
	if err := measureMicro(r, quick); err != nil {
		return fmt.Errorf("micro-benchmarks: %w", err)
	}
	r.Took = time.Since(r.Started)

	page := r.markdown()
	if out == "" {
		fmt.Print(page)
		return r.check(quick)
	}
	if err := os.WriteFile(out, []byte(page), 0o644); err != nil {
		return err
	}
	log.Printf("wrote %s (%s)", out, r.Took.Round(time.Second))
	return r.check(quick)
}
