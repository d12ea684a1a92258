package telegram

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
)

// The bot's command menu (setMyCommands) is registered per audience, so
// that nobody is offered a command the agent would refuse them. The
// commands reach the agent as text ("/new"), which handles them without
// the LLM.

// commands are what anyone allowed to talk to the bot may use, when the
// gateway hands the adapter no command list (channels.Deps.Commands).
var commands = []models.BotCommand{
	{Command: "new", Description: "Start a new conversation"},
	{Command: "compact", Description: "Fold this conversation into memory"},
	{Command: "stop", Description: "Stop the current task"},
	{Command: "model", Description: "List or switch the model for this chat"},
	{Command: "help", Description: "Show what I can do"},
	{Command: "status", Description: "Show the bot's status"},
}

// adminCommands are the ones the agent runs for admins only (its /help
// shows them to admins only), when the gateway hands no list.
var adminCommands = []models.BotCommand{
	{Command: "goal", Description: "Show this chat's goal; /goal <task> sets one"},
	{Command: "dream", Description: "Tidy long-term memory now"},
	{Command: "skill", Description: "List, show, enable or disable skills"},
	{Command: "restart", Description: "Restart the gateway"},
}

// menu is the command menu of one scope.
type menu struct {
	name     string // for the log
	scope    models.BotCommandScope
	commands []models.BotCommand
}

// menus are the menus to register: everyone's commands by default, in all
// private chats, all groups and for all group administrators (who are not
// the bot's admins, so their menu must not fall back to another one), and
// everyone's plus the admin commands in the private chat of each admin
// known by user id.
func (c *Channel) menus() []menu {
	commands, adminCommands := c.menuCommands()
	out := []menu{
		{"default", &models.BotCommandScopeDefault{}, commands},
		{"all_private_chats", &models.BotCommandScopeAllPrivateChats{}, commands},
		{"all_group_chats", &models.BotCommandScopeAllGroupChats{}, commands},
		{"all_chat_administrators", &models.BotCommandScopeAllChatAdministrators{}, commands},
	}
	all := append(append([]models.BotCommand(nil), commands...), adminCommands...)
	for _, id := range c.adminChats() {
		out = append(out, menu{"chat " + strconv.FormatInt(id, 10), &models.BotCommandScopeChat{ChatID: id}, all})
	}
	return out
}

// botCommandName is what Telegram takes as a command: 1-32 lower-case
// letters, digits and underscores.
var botCommandName = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// menuCommands splits the gateway's commands (channels.Deps.Commands)
// into everyone's and the admins' own: a command whose help ends in
// "(admins)" is admin-only, or admin-only in the forms that change
// something, and goes to the admins' menu. A name Telegram cannot show
// ("dream-log") is left out of the menus; typed, it still works. Without
// a list from the gateway, the built-in menus apply.
func (c *Channel) menuCommands() (everyone, admins []models.BotCommand) {
	if len(c.commands) == 0 {
		return commands, adminCommands
	}
	for _, cmd := range c.commands {
		if !botCommandName.MatchString(cmd.Name) {
			continue
		}
		help, isAdmin := strings.CutSuffix(strings.TrimSpace(cmd.Help), "(admins)")
		help, _, _ = strings.Cut(help, ";") // the first clause is the menu's line
		help = strings.TrimSpace(help)
		if help == "" {
			help = cmd.Name
		}
		r := []rune(help)
		r[0] = unicode.ToUpper(r[0])
		bc := models.BotCommand{Command: cmd.Name, Description: clipRunes(string(r), 256)}
		if isAdmin {
			admins = append(admins, bc)
		} else {
			everyone = append(everyone, bc)
		}
	}
	return everyone, admins
}

func clipRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

// adminChats are the private chats of the admins named by user id: the
// admins list, or when it is empty (as for the gateway's access control)
// the entries of allowFrom. Usernames cannot name a chat and are skipped.
func (c *Channel) adminChats() []int64 {
	list := c.cfg.Admins
	if len(list) == 0 {
		list = c.cfg.AllowFrom
	}
	var out []int64
	seen := map[int64]bool{}
	for _, e := range list {
		e, _, _ = strings.Cut(strings.TrimSpace(e), "|") // "id|username"
		if id, err := strconv.ParseInt(e, 10, 64); err == nil && id > 0 && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// registerMenus sets every menu and returns what failed, by scope (the
// commands work typed without a menu, so the caller only logs it). The
// scopes shared by everyone are set at once; the admins' chats one after
// another, so a long allowFrom does not burst into Telegram's rate limit.
// Setting a menu replaces the scope's previous one, so registering again
// changes nothing.
func (c *Channel) registerMenus(ctx context.Context) error {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		errs   []error
		admins []menu
	)
	set := func(m menu) {
		if err := c.setMenu(ctx, m); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}
	for _, m := range c.menus() {
		if _, ok := m.scope.(*models.BotCommandScopeChat); ok {
			admins = append(admins, m)
			continue
		}
		wg.Go(func() { set(m) })
	}
	wg.Go(func() {
		for _, m := range admins {
			set(m)
		}
	})
	wg.Wait()
	return errors.Join(errs...)
}

func (c *Channel) setMenu(ctx context.Context, m menu) error {
	if _, err := c.api.SetMyCommands(ctx, &bot.SetMyCommandsParams{Commands: m.commands, Scope: m.scope}); err != nil && ctx.Err() == nil {
		return fmt.Errorf("%s: %w", m.name, err)
	}
	return nil
}
