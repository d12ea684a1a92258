package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/memory"
	"github.com/nanobot-go/nanobot/agent/repl"
	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/agent/skills"
	"github.com/nanobot-go/nanobot/agent/templates"
	"github.com/nanobot-go/nanobot/gateway/bus"
	"github.com/nanobot-go/nanobot/tools/message"
	"github.com/nanobot-go/nanobot/tools/spawn"
)

func newAgentCmd(a *app) *cobra.Command {
	var msg, sess string
	var noMarkdown bool
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Talk to the agent in the terminal (or one message with -m)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAgent(cmd, a, msg, sess, !noMarkdown)
		},
	}
	cmd.Flags().StringVarP(&msg, "message", "m", "", "send one message, print the reply, exit")
	cmd.Flags().StringVar(&sess, "session", "cli:direct", "conversation to use (successive runs continue it)")
	cmd.Flags().BoolVar(&noMarkdown, "no-markdown", false, "print replies as raw text")
	return cmd
}

func runAgent(cmd *cobra.Command, a *app, msg, sessKey string, markdown bool) error {
	l := a.loaded
	c := &l.Config
	if err := l.Paths.Ensure(); err != nil {
		return err
	}
	if _, err := templates.Sync(l.Paths.Workspace); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM)
	defer stop()
	w, err := a.wire(ctx)
	if err != nil {
		return err
	}
	defer w.close()
	store, err := session.NewFileStore(l.Paths.Sessions, session.FileStoreOptions{Logger: a.log})
	if err != nil {
		return err
	}
	d := c.Agents.Defaults
	loc := time.Local
	if d.Timezone != "" {
		if lz, err := time.LoadLocation(d.Timezone); err == nil {
			loc = lz
		}
	}
	oneShot := msg != ""
	term := repl.New(repl.Options{
		SessionKey: sessKey, Markdown: markdown && !oneShot, ShowToolHints: !oneShot,
		HistoryFile: filepath.Join(l.Paths.State, "cli_history"),
		Stdin:       cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
	})
	temp := d.Temperature
	runner := &agent.Runner{
		Provider: w.provider, Tools: w.tools, Model: w.model, MaxTokens: d.MaxTokens, Temperature: &temp,
		ReasoningEffort: d.ReasoningEffort, MaxIterations: d.MaxToolIterations, Stream: true, Log: a.log,
		Redact: a.redact,
	}
	var loop *agent.Loop
	subs := &agent.Subagents{Runner: *runner, Max: d.MaxConcurrentSubagents, Workspace: l.Paths.Workspace, Log: a.log,
		Publish: func(ctx context.Context, m bus.Inbound) error { loop.Submit(ctx, m); return nil }}
	_ = w.tools.Register(message.New(term, l.Paths.Workspace, c.Tools.RestrictToWorkspace))
	_ = w.tools.Register(spawn.New(subs))
	builder := &agent.ContextBuilder{Workspace: l.Paths.Workspace, Location: loc,
		Skills: skills.New(skills.Options{Workspace: l.Paths.Workspace, Logger: a.log})}
	mem, err := memory.New(memory.Options{
		Workspace: l.Paths.Workspace, Provider: w.provider, Model: w.model, Store: store,
		ContextWindowTokens: d.ContextWindowTokens, MaxTokens: d.MaxTokens, Location: loc,
		SystemPrompt: builder.SystemPrompt, Logger: a.log,
	})
	if err != nil {
		return err
	}
	builder.Memory = mem
	loop = agent.NewLoop(agent.LoopConfig{
		Store: store, Builder: builder, Consolidator: mem,
		Runner: runner, Out: term, MaxConcurrentTurns: d.MaxConcurrentTurns, MaxToolResultChars: d.MaxToolResultChars,
		ContextWindowTokens: d.ContextWindowTokens, Subagents: subs, Log: a.log,
	})
	term.SetAgent(loop)
	subCtx, stopSubs := context.WithCancel(ctx)
	defer func() { stopSubs(); subs.Wait(subCtx) }()

	if oneShot {
		// Ctrl-C in one-shot mode stops the turn and exits non-zero.
		ictx, istop := signal.NotifyContext(ctx, os.Interrupt)
		defer istop()
		_, err := term.Ask(ictx, msg, cmd.OutOrStdout(), nil)
		term.WaitIdle(ictx)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return errors.New("agent: interrupted")
			}
			return fmt.Errorf("agent: %w", err)
		}
		return nil
	}
	return term.Interactive(ctx)
}
