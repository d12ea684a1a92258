package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/tools/goals"
)

// goalCommand runs /goal: alone it shows the chat's goal; with a task from
// an admin it returns the text the turn runs with instead, asking the model
// to record the goal with create_goal and start on it (run true). Anyone
// else is told only an admin may set one.
func (l *Loop) goalCommand(ctx context.Context, args string, m bus.Inbound) (text string, run bool) {
	if args == "" {
		l.reply(ctx, m, l.goalStatus(m.Key()))
		return "", false
	}
	if !m.Admin {
		l.reply(ctx, m, "Only an admin can set a goal: it keeps running on its own and costs tokens.")
		return "", false
	}
	return "[The user set a sustained goal with /goal. Record it now with create_goal: the objective in their words, made self-contained, " +
		"with what done means. Then start working on it.]\n\n" + args, true
}

// goalStatus describes the chat's active goal, or says there is none.
func (l *Loop) goalStatus(key string) string {
	all, err := l.cfg.Goals.List()
	if err != nil {
		l.log.Warn("goals not readable", "err", err)
		return "Sorry, I could not read the goals."
	}
	for _, g := range all {
		if g.SessionKey != key || g.Status != goals.Active {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Goal %s (since %s): %s", g.ID, g.Created.Format("2006-01-02"), g.Objective)
		if n := len(g.Notes); n > 0 {
			fmt.Fprintf(&b, "\nLatest progress (%s): %s", g.Notes[n-1].Time.Format("2006-01-02 15:04"), g.Notes[n-1].Text)
		}
		return b.String()
	}
	return "No active goal in this chat. Set one with /goal <task>."
}
