package main

import (
	"errors"
	"fmt"

	"github.com/nanobot-go/nanobot/agent/skills"
	"github.com/nanobot-go/nanobot/configs"
)

// diagnoseSkills reports each agent's registry-installed skills whose
// files no longer match skills/.lock.json (they are not loaded), and
// skills that cannot be loaded as written.
func diagnoseSkills(l *configs.Loaded) []finding {
	var out []finding
	for _, a := range l.Config.AgentList() {
		paths := l.Paths.ForAgent(a)
		loader := skills.New(skills.Options{Workspace: paths.Workspace, NoBuiltin: true})
		tampered := 0
		for _, p := range loader.Problems() {
			switch {
			case errors.Is(p.Err, skills.ErrTampered):
				tampered++
				out = append(out, finding{"risk",
					fmt.Sprintf("agent %s: skill %s was changed after it was installed; it is not loaded", a.Name, p.Path),
					"nanobot skills remove NAME && nanobot skills install NAME (or look at what changed first)"})
			default:
				out = append(out, finding{"warn", fmt.Sprintf("agent %s: skill problem: %v", a.Name, p), "fix the SKILL.md's frontmatter"})
			}
		}
		if lock, err := skills.ReadLock(loader.Dir()); err == nil && len(lock.Skills) > 0 && tampered == 0 {
			out = append(out, finding{"ok", fmt.Sprintf("agent %s: %d installed skill(s) match skills/.lock.json", a.Name, len(lock.Skills)), ""})
		}
	}
	return out
}
