// Package spawn is the `spawn` tool: the agent hands a complex or long task
// to a background sub-agent and answers the user at once; the sub-agent's
// result comes back to the conversation when it is done.
package spawn

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nanobot-go/nanobot/tools"
)

// Spawner starts sub-agents (agent.Subagents implements it).
type Spawner interface {
	Spawn(ctx context.Context, origin tools.CallContext, task, label string) (id string, err error)
}

// Tool is the spawn tool.
type Tool struct{ s Spawner }

var _ tools.Tool = (*Tool)(nil)

// New returns the tool.
func New(s Spawner) *Tool { return &Tool{s: s} }

func (t *Tool) Name() string { return "spawn" }

func (t *Tool) Description() string {
	return "Start a background sub-agent for a complex or time-consuming task that can run independently " +
		"(research, multi-step file work). You get control back at once; tell the user it is running. " +
		"When it finishes, its result arrives in this conversation and you report it. " +
		"The sub-agent has file, shell and web tools but cannot message the user or spawn further agents; give it a complete, self-contained task."
}

func (t *Tool) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"task":  map[string]any{"type": "string", "description": "the full task, with all context the sub-agent needs"},
			"label": map[string]any{"type": "string", "description": "a short name for the task"},
		},
		"required": []any{"task"},
	}
}

func (t *Tool) Execute(ctx context.Context, args map[string]any) (tools.Result, error) {
	cc, _ := tools.CallContextFrom(ctx)
	if cc.SubAgent {
		return tools.Result{}, errors.New("sub-agents cannot spawn sub-agents")
	}
	task, _ := args["task"].(string)
	if strings.TrimSpace(task) == "" {
		return tools.Result{}, errors.New("task is empty")
	}
	label, _ := args["label"].(string)
	id, err := t.s.Spawn(ctx, cc, task, label)
	if err != nil {
		return tools.Result{}, err
	}
	return tools.Result{Content: fmt.Sprintf("Sub-agent %s started (%s). Its result will arrive in this conversation.", id, label)}, nil
}
