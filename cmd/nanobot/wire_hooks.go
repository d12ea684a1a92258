package main

import (
	"fmt"
	"net/http"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/hooks"
	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// hooks builds the config's hooks (docs/hooks.md); nil when none is
// enabled, so the agent asks nothing.
func (a *app) hooks() (agent.Hooks, error) {
	c := &a.loaded.Config
	set, err := hooks.New(c.Hooks, hooks.Options{
		Workspace: a.loaded.Paths.Workspace, Sandbox: sandbox.Mode(c.Tools.Exec.Sandbox),
		Redact: a.redact, Client: &http.Client{}, Log: a.log,
	})
	if err != nil {
		return nil, fmt.Errorf("hooks: %w", err)
	}
	if set == nil {
		return nil, nil
	}
	a.log.Info("hooks enabled", "count", len(set.Stats()))
	return set, nil
}
