package goals

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/tools"
)

// maxObjective is the longest objective (nanobot's limit is of this order).
const maxObjective = 4000

// Tools returns create_goal, update_goal and list_goals over s, for the
// agent named agent ("" the default).
func Tools(s *Store, agent string) []tools.Tool {
	return []tools.Tool{&Create{s: s, agent: agent, now: time.Now}, &UpdateTool{s: s, now: time.Now}, &List{s: s}}
}

// current is the goal of the call's conversation that is active, and its
// index.
func current(goals []Goal, key string) int {
	for i, g := range goals {
		if g.SessionKey == key && g.Status == Active {
			return i
		}
	}
	return -1
}

// Create is the create_goal tool.
type Create struct {
	s     *Store
	agent string
	now   func() time.Time
}

func (*Create) Name() string { return "create_goal" }
func (*Create) Description() string {
	return "Record a sustained goal for this conversation: a task you keep working on across turns and days until it is done " +
		"(\"get the test suite green\", \"watch the flight price and tell me when it drops under 300\"). " +
		"Use it only when the user asks for ongoing work (or writes /goal). The objective must stand on its own, be safe to repeat, " +
		"and say when it is done. The heartbeat then wakes you to continue it and your progress goes to this chat; " +
		"record progress and the end with update_goal. One active goal per conversation. Admins only."
}
func (*Create) Parameters() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{
		"objective":  map[string]any{"type": "string", "minLength": 1, "maxLength": maxObjective, "description": "The goal, self-contained, with what done means."},
		"ui_summary": map[string]any{"type": "string", "maxLength": 120, "description": "A one-line label for lists."},
	}, "required": []any{"objective"}}
}

func (t *Create) Execute(ctx context.Context, args map[string]any) (tools.Result, error) {
	cc, _ := tools.CallContextFrom(ctx)
	if !cc.Admin {
		return tools.Result{}, errors.New("only an admin may set a sustained goal (it runs on its own later and costs tokens); tell the user so")
	}
	if cc.SessionKey == "" || cc.Channel == "" || cc.ChatID == "" {
		return tools.Result{}, errors.New("goals need a conversation with a chat to report to")
	}
	a := tools.Args(args)
	objective := strings.TrimSpace(a.String("objective"))
	if objective == "" {
		return tools.Result{}, errors.New("objective is empty")
	}
	now := t.now()
	g := Goal{ID: newID(), Agent: t.agent, SessionKey: cc.SessionKey, Channel: cc.Channel, ChatID: cc.ChatID, Objective: objective,
		Summary: tools.OneLine(a.String("ui_summary"), 120), Status: Active, By: cc.Channel + ":" + cc.SenderID, Created: now, Updated: now, Advanced: now}
	err := t.s.Update(func(goals []Goal) ([]Goal, error) {
		if i := current(goals, cc.SessionKey); i >= 0 {
			return nil, fmt.Errorf("this conversation already has an active goal (%s); finish, cancel or replace it with update_goal", goals[i].Label())
		}
		return append(goals, g), nil
	})
	if err != nil {
		return tools.Result{}, err
	}
	return tools.Result{Content: fmt.Sprintf("Goal %s recorded. Start on it now; the heartbeat wakes you to continue it. "+
		"Report progress with update_goal action=progress, and action=complete only when it is done and checked.", g.ID)}, nil
}

// UpdateTool is the update_goal tool.
type UpdateTool struct {
	s   *Store
	now func() time.Time
}

func (*UpdateTool) Name() string { return "update_goal" }
func (*UpdateTool) Description() string {
	return "Update this conversation's active goal: action=progress records what you did (recap), complete ends it once it is achieved and verified, " +
		"cancel when the user calls it off, block when you cannot go on without the user (say why in recap), " +
		"replace when the user changes the objective (objective)."
}
func (*UpdateTool) Parameters() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{
		"action":     map[string]any{"type": "string", "enum": []any{"progress", "complete", "cancel", "block", "replace"}},
		"recap":      map[string]any{"type": "string", "maxLength": 8000, "description": "What was done, or why it ends or is blocked, briefly and honestly."},
		"objective":  map[string]any{"type": "string", "maxLength": maxObjective, "description": "The new objective, for replace."},
		"ui_summary": map[string]any{"type": "string", "maxLength": 120, "description": "A new one-line label, for replace."},
	}, "required": []any{"action"}}
}

func (t *UpdateTool) Execute(ctx context.Context, args map[string]any) (tools.Result, error) {
	cc, _ := tools.CallContextFrom(ctx)
	a := tools.Args(args)
	action, recap := a.String("action"), strings.TrimSpace(a.String("recap"))
	if action == "replace" && !cc.Admin {
		return tools.Result{}, errors.New("only an admin may change a goal's objective")
	}
	var label string
	err := t.s.Update(func(goals []Goal) ([]Goal, error) {
		i := current(goals, cc.SessionKey)
		if i < 0 {
			return nil, errors.New("this conversation has no active goal")
		}
		g := &goals[i]
		now := t.now()
		g.Updated = now
		if recap != "" {
			g.Notes = append(g.Notes, Note{Time: now, Text: tools.Clip(recap, 2000)})
		}
		switch action {
		case "progress":
			if recap == "" {
				return nil, errors.New("progress needs a recap of what was done")
			}
		case "complete":
			g.Status = Complete
		case "cancel":
			g.Status = Cancelled
		case "block":
			g.Status = Blocked
		case "replace":
			obj := strings.TrimSpace(a.String("objective"))
			if obj == "" {
				return nil, errors.New("replace needs the new objective")
			}
			g.Objective, g.Summary = obj, tools.OneLine(a.String("ui_summary"), 120)
		default:
			return nil, fmt.Errorf("unknown action %q", action)
		}
		label = g.Label()
		return goals, nil
	})
	if err != nil {
		return tools.Result{}, err
	}
	switch action {
	case "progress", "replace":
		return tools.Result{Content: fmt.Sprintf("Goal %q updated; it stays active.", label)}, nil
	}
	return tools.Result{Content: fmt.Sprintf("Goal %q is now %s; the heartbeat no longer advances it. Tell the user.", label, map[string]Status{"complete": Complete, "cancel": Cancelled, "block": Blocked}[action])}, nil
}

// List is the list_goals tool.
type List struct{ s *Store }

func (*List) Name() string { return "list_goals" }
func (*List) Description() string {
	return "List sustained goals: this conversation's, or (for an admin, all=true) every conversation's active goals, with their latest progress."
}
func (*List) Parameters() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{
		"all": map[string]any{"type": "boolean", "description": "Every conversation's active goals (admins)."},
	}}
}

func (t *List) Execute(ctx context.Context, args map[string]any) (tools.Result, error) {
	cc, _ := tools.CallContextFrom(ctx)
	all := tools.Args(args).Bool("all", false)
	if all && !cc.Admin {
		return tools.Result{}, errors.New("only an admin may list other conversations' goals")
	}
	goals, err := t.s.List()
	if err != nil {
		return tools.Result{}, err
	}
	var b strings.Builder
	for _, g := range goals {
		if all && g.Status != Active || !all && g.SessionKey != cc.SessionKey {
			continue
		}
		fmt.Fprintf(&b, "- %s [%s] %s (%s, since %s)\n  objective: %s\n", g.ID, g.Status, g.Label(), g.SessionKey, g.Created.Format("2006-01-02"), tools.OneLine(g.Objective, 300))
		if n := len(g.Notes); n > 0 {
			fmt.Fprintf(&b, "  latest: %s %s\n", g.Notes[n-1].Time.Format("2006-01-02 15:04"), tools.OneLine(g.Notes[n-1].Text, 300))
		}
	}
	if b.Len() == 0 {
		return tools.Result{Content: "No goals."}, nil
	}
	return tools.Result{Content: b.String()}, nil
}

func newID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "g" + hex.EncodeToString(b[:])
}
