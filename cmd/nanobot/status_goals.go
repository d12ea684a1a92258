package main

import (
	"fmt"
	"io"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/goals"
)

// printGoals lists the active sustained goals (state/goals.json), with
// their latest progress.
func printGoals(w io.Writer, a *app) {
	all, err := goals.NewStore(agent.GoalsFile(a.loaded.Paths)).List()
	if err != nil {
		fmt.Fprintf(w, "goals:      (cannot read: %v)\n", err)
		return
	}
	active := 0
	for _, g := range all {
		if g.Status == goals.Active {
			active++
		}
	}
	if active == 0 {
		fmt.Fprintln(w, "goals:      none active (/goal <task> in a chat sets one)")
		return
	}
	fmt.Fprintf(w, "goals:      %d active\n", active)
	for _, g := range all {
		if g.Status != goals.Active {
			continue
		}
		fmt.Fprintf(w, "  %s  %s — %s (since %s)\n", g.ID, g.SessionKey, g.Label(), g.Created.Format("2006-01-02"))
		if n := len(g.Notes); n > 0 {
			fmt.Fprintf(w, "            latest %s: %s\n", g.Notes[n-1].Time.Format("2006-01-02 15:04"), tools.OneLine(g.Notes[n-1].Text, 100))
		}
	}
}
