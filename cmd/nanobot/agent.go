package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/repl"
	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/agent/templates"
	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway"
	"github.com/nanobot-go/nanobot/providers"
)

func newAgentCmd(a *app) *cobra.Command {
	var msg, sess, agentName string
	var noMarkdown bool
	cmd := command("agent", "Talk to the agent in the terminal (or one message with -m)", func(cmd *cobra.Command) error {
		return runAgent(cmd, a, agentName, msg, sess, !noMarkdown)
	})
	cmd.Flags().StringVarP(&msg, "message", "m", "", "send one message, print the reply, exit")
	cmd.Flags().StringVar(&sess, "session", "cli:direct", "conversation to use (successive runs continue it)")
	cmd.Flags().StringVar(&agentName, "agent", configs.DefaultAgent, "which configured agent to talk to (agents.list / agents.<name>)")
	cmd.Flags().BoolVar(&noMarkdown, "no-markdown", false, "print replies as raw text")
	return cmd
}

func runAgent(cmd *cobra.Command, a *app, agentName, msg, sessKey string, markdown bool) error {
	l := a.loaded
	c := &l.Config
	profile, ok := c.AgentNamed(agentName)
	if !ok {
		var names []string
		for _, ag := range c.AgentList() {
			names = append(names, ag.Name)
		}
		return fmt.Errorf("agent: no agent %q in %s (configured: %s)", agentName, l.Path, strings.Join(names, ", "))
	}
	paths := l.Paths.ForAgent(profile)
	if err := l.Paths.Ensure(); err != nil {
		return err
	}
	if err := paths.Ensure(); err != nil {
		return err
	}
	if _, err := templates.Sync(paths.Workspace); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM)
	defer stop()
	w, err := a.wire(ctx)
	if err != nil {
		return err
	}
	defer w.close()
	provider, model, providerName, tools := w.provider, w.model, w.providerName, w.tools
	if profile.Name != configs.DefaultAgent {
		provider, model, providerName, _ = buildModel(c, profile.Settings, a.log, a.signIn())
		if tools, err = a.agentTools(w.cron, w.sessions)(profile, paths); err != nil {
			return err
		}
	}
	if u, ok := provider.(providers.Unconfigured); ok {
		// A chat channel answers each message with this; a terminal user
		// is better served by hearing it once, before typing anything.
		return fmt.Errorf("agent: %s", u.Message())
	}
	store, err := session.NewFileStore(paths.Sessions, session.FileStoreOptions{Logger: a.log})
	if err != nil {
		return err
	}
	oneShot := msg != ""
	term := repl.New(repl.Options{
		SessionKey: sessKey, Markdown: markdown && !oneShot, ShowToolHints: !oneShot,
		HistoryFile: filepath.Join(l.Paths.State, "cli_history"),
		Stdin:       cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
	})
	// The terminal writes its own part of the ledger ("cli"), so a gateway
	// of the same instance may write at the same time.
	led, err := usage.Open(ctx, gateway.UsageDir(l.Paths), usage.Options{Worker: "cli", Prices: gateway.Prices(c), Location: c.Agents.Defaults.Location()})
	if err != nil {
		return err
	}
	defer led.Close()
	obs, stopTracing := a.startLangfuse()
	defer stopTracing()
	hooks, err := a.hooks()
	if err != nil {
		return err
	}
	emb, err := buildEmbedding(c, profile.Settings, a.log, a.signIn())
	if err != nil {
		a.log.Warn("memory_search ranks by words alone: the embedding model cannot be used", "err", err)
	}
	ag, err := agent.New(c, paths, agent.Deps{ // no Targets: the terminal is the only chat
		Embedding: emb, Hooks: hooks, Agent: profile.Name, Provider: provider, Model: model, Tools: tools, Store: store, Out: term, Redact: a.redact, Log: a.log, Observer: obs,
		Presets: cliPresets(c, profile, a), Usage: led, ProviderName: providerName, Budgets: gateway.Budgets(c, led, a.log),
	})
	if err != nil {
		return err
	}
	loop, subs := ag.Loop, ag.Subagents
	defer ag.Recall.Close()
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

// cliPresets lets /model switch among the agent's presets in the terminal.
func cliPresets(c *configs.Config, ag configs.Agent, a *app) agent.Presets {
	if len(c.ModelPresets) == 0 {
		return agent.Presets{}
	}
	names := ag.Presets
	if names == nil {
		for n := range c.ModelPresets {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	return agent.Presets{Names: names, Resolve: func(name string) (agent.Model, error) {
		p, ok := c.ModelPresets[name]
		if !ok {
			return agent.Model{}, fmt.Errorf("no preset %q in modelPresets", name)
		}
		prov, err := buildPreset(c, p, a.log, a.signIn())
		if err != nil {
			return agent.Model{}, err
		}
		return agent.Model{Provider: prov, Model: p.Model, MaxTokens: p.MaxTokens, Temperature: p.Temperature, ReasoningEffort: p.ReasoningEffort}, nil
	}}
}
