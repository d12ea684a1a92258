package goals

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/tools"
)

// Due marks the active goals not advanced for every as advanced at now
// and returns them: the heartbeat starts a check-in for each. Marking
// first means two processes beating at once (cluster workers) do not both
// advance a goal.
//
// A beat with nothing due only reads the file: it takes no lock and
// writes nothing.
func (s *Store) Due(now time.Time, every time.Duration) ([]Goal, error) {
	all, err := s.List()
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(all, func(g Goal) bool { return g.Status == Active && now.Sub(g.Advanced) >= every }) {
		return nil, nil
	}
	var due []Goal
	err = s.Update(func(goals []Goal) ([]Goal, error) {
		due = due[:0]
		for i := range goals {
			g := &goals[i]
			if g.Status == Active && now.Sub(g.Advanced) >= every {
				g.Advanced = now
				due = append(due, *g)
			}
		}
		return goals, nil
	})
	return due, err
}

// CheckIn is the message that wakes the agent to continue g; silent is
// the reply that means nothing worth telling the user.
func CheckIn(g Goal, silent string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[Goal check-in: you have an active goal in this conversation (%s, set %s).\n\nObjective: %s\n",
		g.ID, g.Created.Format("2006-01-02"), g.Objective)
	if len(g.Notes) > 0 {
		b.WriteString("\nProgress so far:\n")
		for _, n := range g.Notes[max(0, len(g.Notes)-5):] {
			fmt.Fprintf(&b, "- %s: %s\n", n.Time.Format("2006-01-02 15:04"), tools.OneLine(n.Text, 400))
		}
	}
	fmt.Fprintf(&b, "\nContinue working toward it with your tools now. Record what you did with update_goal action=progress; "+
		"when it is achieved and verified, update_goal action=complete and tell the user; if you need the user, action=block and ask. "+
		"If there is nothing new worth telling the user, reply exactly %s.]", silent)
	return b.String()
}
