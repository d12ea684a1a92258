package discord

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/nanobot-go/nanobot/bus"
)

// Discord's limits on application commands.
const (
	maxAppCommands = 100 // per scope (global, or one guild)
	maxDescription = 100 // of a command, an option, a choice's name
	maxOptions     = 25
	maxChoices     = 25
)

// validName reports what Discord takes as a chat command's or option's
// name: 1 to 32 of "-", "_", lower-case letters and digits of any
// script. (A regexp of it, its Unicode classes repeated 32 times, cost
// 1.3 MB at every start.)
func validName(name string) bool {
	n := 0
	for _, r := range name {
		n++
		if n > 32 || r != '-' && r != '_' && !unicode.IsLower(r) && !unicode.IsNumber(r) {
			return false
		}
	}
	return n > 0
}

// appCommands are the gateway's chat commands as Discord application
// commands: each argument a string option (with its choices, when it has a
// few), in the order it is written. Commands Discord would refuse (a name
// it does not take) are left out, so one odd command cannot keep the
// others from the menu.
func appCommands(cmds []bus.Command) []*discordgo.ApplicationCommand {
	out := []*discordgo.ApplicationCommand{}
	for _, c := range cmds {
		if !validName(c.Name) || len(out) == maxAppCommands {
			continue
		}
		ac := &discordgo.ApplicationCommand{
			Type:        discordgo.ChatApplicationCommand,
			Name:        c.Name,
			Description: clip(c.Help, maxDescription),
			Options:     []*discordgo.ApplicationCommandOption{},
		}
		required := true // Discord wants the required options first
		for _, a := range c.Args {
			if !validName(a.Name) || len(ac.Options) == maxOptions || (a.Required && !required) {
				break
			}
			required = a.Required
			opt := &discordgo.ApplicationCommandOption{
				Type:        discordgo.ApplicationCommandOptionString,
				Name:        a.Name,
				Description: clip(cmpOr(a.Help, a.Name), maxDescription),
				Required:    a.Required,
			}
			for _, v := range a.Choices {
				if len(opt.Choices) < maxChoices {
					opt.Choices = append(opt.Choices, &discordgo.ApplicationCommandOptionChoice{Name: clip(v, maxDescription), Value: v})
				}
			}
			ac.Options = append(ac.Options, opt)
		}
		out = append(out, ac)
	}
	return out
}

// clip shortens s to n characters, keeping a trailing "(admins)": the
// menu should still say who may use a command.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	const admins = " (admins)"
	tail := ""
	if strings.HasSuffix(s, admins) {
		s, tail = strings.TrimSuffix(s, admins), admins
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1-utf8.RuneCountInString(tail)])) + "…" + tail
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// registerCommands puts the menu in place: the commands in every guild of
// commandGuilds and none globally, or globally when there are none; with
// slashCommands off, none anywhere. Each scope is one bulk overwrite, so
// commands no longer offered disappear and a restart changes nothing.
// Without a command table (Deps.Commands empty) it leaves Discord alone.
func (c *Channel) registerCommands(ctx context.Context, appID string) error {
	cmds := []*discordgo.ApplicationCommand{}
	if c.cfg.slashCommands() {
		if len(c.commands) == 0 {
			return nil
		}
		cmds = appCommands(c.commands)
	}
	global := cmds
	if len(c.cfg.CommandGuilds) > 0 {
		global = []*discordgo.ApplicationCommand{}
		for _, g := range c.cfg.CommandGuilds {
			if _, err := c.s.ApplicationCommandBulkOverwrite(appID, g, cmds, discordgo.WithContext(ctx)); err != nil {
				return fmt.Errorf("discord: register commands in guild %s: %s", g, c.redact.Error(err))
			}
		}
	}
	if _, err := c.s.ApplicationCommandBulkOverwrite(appID, "", global, discordgo.WithContext(ctx)); err != nil {
		return fmt.Errorf("discord: register global commands: %s", c.redact.Error(err))
	}
	c.log.Info("discord: application commands registered", "commands", len(cmds), "guilds", len(c.cfg.CommandGuilds))
	return nil
}

// commandText is the chat command an application command interaction
// stands for: "/name" and its options' values, in the order the command's
// arguments are written (the order of the interaction for options the
// table does not know).
func (c *Channel) commandText(data discordgo.ApplicationCommandInteractionData) string {
	values := map[string]string{}
	var order []string
	for _, o := range data.Options {
		if o == nil {
			continue
		}
		v := strings.TrimSpace(fmt.Sprint(o.Value))
		if o.Value == nil || v == "" {
			continue
		}
		values[o.Name] = v
		order = append(order, o.Name)
	}
	words := []string{"/" + data.Name}
	for _, cmd := range c.commands {
		if cmd.Name != data.Name {
			continue
		}
		for _, a := range cmd.Args {
			if v, ok := values[a.Name]; ok {
				words = append(words, v)
				delete(values, a.Name)
			}
		}
	}
	for _, name := range order {
		if v, ok := values[name]; ok {
			words = append(words, v)
		}
	}
	return strings.Join(words, " ")
}
