// Package repl is the terminal front end of `nanobot agent`: an interactive
// prompt with line editing and history, streamed replies rendered from
// Markdown to ANSI, a "thinking…" indicator, Ctrl-C to stop a turn, and a
// one-shot mode that prints only the reply.
//
// Concurrency: PublishOutbound may be called from any goroutine, concurrently
// with the rest; Ask, Interactive and WaitIdle have one caller at a time (the
// terminal is one conversation), and SetAgent is called before them. During a
// turn one goroutine watches for Ctrl-C and ends with the turn; an Indicator
// animates on a goroutine of its own between Start and Stop, both safe from
// any goroutine. A Renderer is not safe for concurrent use.
package repl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/chzyer/readline"

	"github.com/nanobot-go/nanobot/bus"
)

// Agent is what the REPL needs of the agent loop.
type Agent interface {
	Submit(ctx context.Context, m bus.Inbound)
	StopSession(key string) int
	// Idle reports that no turn is running or queued (the last one is saved).
	Idle() bool
}

// Options configure a REPL.
type Options struct {
	// SessionKey is the conversation (default "cli:direct").
	SessionKey string
	// Markdown renders replies for the terminal; off prints raw text.
	Markdown bool
	// Name is shown in the prompt and indicator (default "nanobot").
	Name string
	// HistoryFile keeps prompt history across runs ("" = none).
	HistoryFile string
	// ShowToolHints prints a line per tool call (interactive mode).
	ShowToolHints  bool
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// REPL is a terminal conversation with the agent. It is also the agent's
// Outbox: the loop publishes to it.
type REPL struct {
	opts  Options
	agent Agent
	out   chan bus.Outbound
}

// New returns a REPL; pass it as the loop's Outbox, then call SetAgent.
func New(opts Options) *REPL {
	if opts.SessionKey == "" {
		opts.SessionKey = "cli:direct"
	}
	if opts.Name == "" {
		opts.Name = "nanobot"
	}
	if opts.Stdin == nil {
		opts.Stdin = os.Stdin
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	return &REPL{opts: opts, out: make(chan bus.Outbound, 256)}
}

// SetAgent connects the loop (which is built with the REPL as its Outbox).
func (r *REPL) SetAgent(a Agent) { r.agent = a }

// PublishOutbound receives the agent's messages.
func (r *REPL) PublishOutbound(ctx context.Context, m bus.Outbound) error {
	select {
	case r.out <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ErrReply is returned by Ask when the agent answered with an error message.
var ErrReply = errors.New("the agent reported an error")

// WaitIdle waits until the agent has finished (saved) every turn, or ctx
// ends. The reply reaches the terminal before the turn is saved; a one-shot
// run must not exit in between.
func (r *REPL) WaitIdle(ctx context.Context) {
	for !r.agent.Idle() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Ask sends one message and prints the reply to w as it streams (rendered
// when Markdown is on). It returns the reply text; ErrReply (wrapped with
// the message) when the agent reported a failure.
func (r *REPL) Ask(ctx context.Context, text string, w io.Writer, indicator *Indicator) (string, error) {
	// The terminal is the owner's: whoever runs this has the config (its
	// keys) and the instance's files already, so it acts as an admin
	// (memory_search over every conversation, /dream, goals, `my`).
	r.agent.Submit(ctx, bus.Inbound{
		Channel: "cli", ChatID: "direct", SenderID: "user", Content: text,
		SessionKey: r.opts.SessionKey, ReceivedAt: time.Now(), Admin: true,
	})
	var rend Renderer
	streamed := false
	write := func(s string) {
		if indicator != nil {
			indicator.Stop()
		}
		if r.opts.Markdown {
			s = rend.Write(s)
		}
		fmt.Fprint(w, s)
	}
	for {
		var m bus.Outbound
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case m = <-r.out:
		}
		switch m.Kind {
		case bus.KindDelta:
			streamed = true
			write(m.Content)
		case bus.KindStreamEnd, bus.KindMessage:
			if m.IsError && m.Final {
				if indicator != nil {
					indicator.Stop()
				}
				return m.Content, fmt.Errorf("%w: %s", ErrReply, m.Content)
			}
			if !streamed {
				write(m.Content)
			}
			if r.opts.Markdown {
				fmt.Fprint(w, rend.Flush())
			}
			fmt.Fprintln(w)
			streamed = false
			if m.Final {
				return m.Content, nil
			}
		case bus.KindToolHint:
			if r.opts.ShowToolHints {
				if indicator != nil {
					indicator.Stop()
				}
				fmt.Fprintf(r.opts.Stderr, "🔧 %s\n", m.Content)
			}
		}
	}
}

// Interactive runs the prompt until EOF, "exit"/"quit", or Ctrl-C at the
// prompt. Ctrl-C during a turn stops the turn; a second Ctrl-C during the
// same turn exits.
func (r *REPL) Interactive(ctx context.Context) error {
	lines, closeInput, err := r.input()
	if err != nil {
		return err
	}
	defer closeInput()
	fmt.Fprintf(r.opts.Stderr, "%s — type a message, /help for commands, Ctrl-D to quit.\n", r.opts.Name)
	for {
		line, err := lines()
		if errors.Is(err, io.EOF) || errors.Is(err, readline.ErrInterrupt) {
			return nil
		}
		if err != nil {
			return err
		}
		line = strings.TrimSpace(line)
		switch line {
		case "":
			continue
		case "exit", "quit", ":q":
			return nil
		}
		if exit := r.turn(ctx, line); exit {
			return nil
		}
	}
}

// turn runs one exchange with Ctrl-C handling; it reports whether to exit.
func (r *REPL) turn(ctx context.Context, line string) (exit bool) {
	turnCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	var once sync.Once
	go func() {
		n := 0
		for {
			select {
			case <-turnCtx.Done():
				return
			case <-sig:
				n++
				if n == 1 {
					r.agent.StopSession(r.opts.SessionKey)
					fmt.Fprintln(r.opts.Stderr, "\n(stopping — press Ctrl-C again to quit)")
					continue
				}
				once.Do(func() { exit = true })
				cancel()
				return
			}
		}
	}()
	ind := NewIndicator(r.opts.Stderr, r.opts.Name+" is thinking…")
	ind.Start()
	_, err := r.Ask(turnCtx, line, r.opts.Stdout, ind)
	ind.Stop()
	r.WaitIdle(turnCtx)
	switch {
	case errors.Is(err, ErrReply):
		fmt.Fprintln(r.opts.Stderr, strings.TrimPrefix(err.Error(), ErrReply.Error()+": "))
	case err != nil && !errors.Is(err, context.Canceled):
		fmt.Fprintln(r.opts.Stderr, "error:", err)
	}
	r.drain()
	return exit
}

// drain discards messages left from a stopped turn.
func (r *REPL) drain() {
	for {
		select {
		case <-r.out:
		default:
			return
		}
	}
}

// input returns a line reader: readline on a terminal, plain lines otherwise.
func (r *REPL) input() (func() (string, error), func(), error) {
	if f, ok := r.opts.Stdin.(*os.File); ok && readline.IsTerminal(int(f.Fd())) {
		rl, err := readline.NewEx(&readline.Config{
			Prompt:          "\x1b[1;32m> \x1b[0m",
			HistoryFile:     r.opts.HistoryFile,
			InterruptPrompt: "^C",
			EOFPrompt:       "exit",
			Stdin:           f,
			Stdout:          r.opts.Stdout,
			Stderr:          r.opts.Stderr,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("terminal: %w", err)
		}
		return rl.Readline, func() { _ = rl.Close() }, nil
	}
	sc := bufio.NewScanner(r.opts.Stdin)
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	return func() (string, error) {
		if sc.Scan() {
			return sc.Text(), nil
		}
		if err := sc.Err(); err != nil {
			return "", err
		}
		return "", io.EOF
	}, func() {}, nil
}
