package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/nanobot-go/nanobot/agent/skills"
	"github.com/nanobot-go/nanobot/bus"
)

// skillCommand is /skill: list, show NAME, and for admins enable NAME and
// disable NAME. A switch is saved to the config's disabledSkills first
// (LoopConfig.SwitchSkill) and applies from the next turn; a skill cannot
// switch itself, since only an admin's chat message reaches this.
func (l *Loop) skillCommand(ctx context.Context, m bus.Inbound, args string) error {
	verb, name, _ := strings.Cut(strings.TrimSpace(args), " ")
	name = strings.TrimSpace(name)
	sk := l.cfg.Skills
	switch strings.ToLower(verb) {
	case "", "list":
		l.reply(ctx, m, skillList(sk.All()))
		return nil
	case "show":
		s, ok := sk.Get(name)
		if !ok {
			l.reply(ctx, m, fmt.Sprintf("No skill %q. /skill lists them.", name))
			return nil
		}
		l.reply(ctx, m, skillShow(s))
		return nil
	case "enable", "disable":
		disable := strings.EqualFold(verb, "disable")
		switch {
		case !m.Admin:
			l.reply(ctx, m, "Only an admin can switch skills on or off.")
			return nil
		case name == "":
			l.reply(ctx, m, "Usage: /skill "+strings.ToLower(verb)+" NAME")
			return nil
		case l.cfg.SwitchSkill == nil:
			l.reply(ctx, m, "Skills cannot be switched here: there is no config file to save it in.")
			return nil
		}
		if _, ok := sk.Get(name); !ok && disable {
			l.reply(ctx, m, fmt.Sprintf("No skill %q. /skill lists them.", name))
			return nil
		}
		disabled, err := l.cfg.SwitchSkill(name, disable)
		if err != nil {
			l.reply(ctx, m, "Sorry, I could not save that to the config.")
			return err
		}
		sk.SetDisabled(disabled)
		state := "enabled"
		if disable {
			state = "disabled"
		}
		l.reply(ctx, m, fmt.Sprintf("Skill %s %s (saved in disabledSkills); it applies from the next message.", name, state))
		return nil
	}
	l.reply(ctx, m, "Usage: /skill [list] | show NAME | enable NAME | disable NAME")
	return nil
}

func skillList(all []skills.Skill) string {
	if len(all) == 0 {
		return "No skills."
	}
	var b strings.Builder
	b.WriteString("Skills:\n")
	for _, s := range all {
		fmt.Fprintf(&b, "- %s (%s", s.Name, s.Source)
		if s.Version != "" {
			fmt.Fprintf(&b, " %s", s.Version)
		}
		b.WriteString(")")
		switch {
		case s.Off != "":
			fmt.Fprintf(&b, " — off: %s", s.Off)
		case !s.Available():
			fmt.Fprintf(&b, " — unavailable: missing %s", strings.Join(s.Missing, ", "))
		}
		if s.Description != "" {
			fmt.Fprintf(&b, ": %s", s.Description)
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func skillShow(s skills.Skill) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s — %s\nsource: %s", s.Name, s.Description, s.Source)
	if s.Version != "" {
		fmt.Fprintf(&b, " %s", s.Version)
	}
	if s.Off != "" {
		fmt.Fprintf(&b, "\noff: %s", s.Off)
	}
	if len(s.Missing) > 0 {
		fmt.Fprintf(&b, "\nmissing: %s", strings.Join(s.Missing, ", "))
	}
	body := s.Body
	if len(body) > 1500 {
		body = body[:1500] + "…"
	}
	fmt.Fprintf(&b, "\n\n%s", body)
	return b.String()
}
