package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/bus"
)

// Commands lists the slash commands handled without the LLM, with their
// arguments for platforms that show a command menu (the gateway hands the
// table to the channels; see bus.Command).
var Commands = []bus.Command{
	{Name: "new", Help: "start a new conversation (the current one is archived to memory)"},
	{Name: "compact", Help: "fold this conversation into memory now, keeping the last exchanges word for word"},
	{Name: "dream", Help: "tidy long-term memory now: duplicates merged, outdated facts updated (admins)"},
	{Name: "dream-prompt", Help: "show the dream's instructions; /dream-prompt <text> sets them, /dream-prompt reset goes back (admins)",
		Args: []bus.CommandArg{{Name: "text", Help: "the new instructions, or reset"}}},
	{Name: "dream-log", Help: "list the kept versions of long-term memory (MEMORY.md), newest first"},
	{Name: "dream-restore", Help: "put a kept version of long-term memory back: /dream-restore <version> (admins)",
		Args: []bus.CommandArg{{Name: "version", Help: "a version from /dream-log", Required: true}}},
	{Name: "goal", Help: "show this chat's sustained goal; /goal <task> sets one the agent keeps working on (admins)",
		Args: []bus.CommandArg{{Name: "task", Help: "what to keep working on (admins)"}}},
	{Name: "skill", Help: "list the skills; /skill show NAME, /skill enable NAME, /skill disable NAME (admins)",
		Args: []bus.CommandArg{{Name: "action", Help: "what to do with a skill", Choices: []string{"show", "enable", "disable"}}, {Name: "name", Help: "the skill"}}},
	{Name: "stop", Help: "stop the current answer and anything queued"},
	{Name: "restart", Help: "stop the gateway gracefully and start it again (admins)"},
	{Name: "status", Help: "show the model, conversation size and context use"},
	{Name: "model", Help: "list the model presets; /model <preset> switches this chat, /model reset goes back",
		Args: []bus.CommandArg{{Name: "preset", Help: "a model preset, or reset"}}},
	{Name: "voice", Help: "voice replies: /voice on speaks every answer, /voice off only answers voice notes with voice",
		Args: []bus.CommandArg{{Name: "mode", Help: "on or off", Choices: []string{"on", "off"}}}},
	{Name: "queue", Help: "show how messages written during an answer are handled; /queue <queue|steer|collect|interrupt> sets it for this chat",
		Args: []bus.CommandArg{{Name: "mode", Help: "what a message written during an answer does", Choices: []string{"queue", "steer", "collect", "interrupt", "reset"}}}},
	{Name: "usage", Help: "show tokens and cost of this chat (/usage all: everyone's, for admins)",
		Args: []bus.CommandArg{{Name: "scope", Help: "all: everyone's (admins)", Choices: []string{"all"}}}},
	{Name: "help", Help: "show this help"},
}

// parseCommand returns the lower-cased command name of "/name args" (a
// Telegram-style "/name@botname" suffix is ignored) and its arguments, or
// "" when text is not a command.
func parseCommand(text string) (name, args string) {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "/") || len(t) < 2 {
		return "", ""
	}
	head, rest, _ := strings.Cut(t[1:], " ")
	head, _, _ = strings.Cut(head, "@")
	return strings.ToLower(head), strings.TrimSpace(rest)
}

// commandSession loads the chat's session for a command; when it cannot,
// it tells the user so and returns the error.
func (l *Loop) commandSession(ctx context.Context, m bus.Inbound) (*session.Session, error) {
	sess, err := l.cfg.Store.Load(ctx, m.Key())
	if err != nil {
		l.reply(ctx, m, "Sorry, I could not load this conversation.")
	}
	return sess, err
}

// command runs a slash command. handled is false for commands the agent does
// not own, which go to the LLM as ordinary text.
func (l *Loop) command(ctx context.Context, name, args string, m bus.Inbound) (handled bool, err error) {
	switch name {
	case "help":
		var b strings.Builder
		b.WriteString("Commands:\n")
		for _, c := range Commands {
			if c.AdminOnly() && !m.Admin {
				continue // only what the asker may use
			}
			fmt.Fprintf(&b, "/%s — %s\n", c.Name, c.Help)
		}
		if m.Admin {
			// The gate answers these, for admins only: shown to them only.
			b.WriteString("/pairing list|approve CODE|deny CODE|revoke CHANNEL:SENDER — manage who may talk to the bot (admins)\n")
			if l.cfg.Approvals != nil {
				b.WriteString("/approve ID [always] | /deny ID — answer a request to run a command (admins)\n")
			}
		}
		l.reply(ctx, m, strings.TrimRight(b.String(), "\n"))
		return true, nil
	case "new":
		sess, err := l.commandSession(ctx, m)
		if err != nil {
			return true, err
		}
		if err := l.archive(consolidationContext(ctx, m.Channel, m.ChatID, m.SenderID, sess.Key, m.Admin), sess); err != nil {
			l.reply(ctx, m, "Sorry, I could not start a new conversation.")
			return true, err
		}
		l.reply(ctx, m, "New conversation started.")
		return true, nil
	case "compact":
		return true, l.compactCommand(ctx, m)
	case "skill", "skills":
		if l.cfg.Skills == nil {
			return false, nil
		}
		return true, l.skillCommand(ctx, m, args)
	case "dream":
		return true, l.dream(ctx, m)
	case "dream-prompt":
		return true, l.dreamPrompt(ctx, m, args)
	case "dream-log":
		return true, l.dreamLog(ctx, m)
	case "dream-restore":
		return true, l.dreamRestore(ctx, m, args)
	case "status":
		sess, err := l.cfg.Store.Load(ctx, m.Key())
		if err != nil {
			return true, err
		}
		l.reply(ctx, m, l.statusText(l.runnerFor(m, sess).Model, sess.Key, sess.Len(), sess.Consolidated(), l.estimateTokens(sess)))
		return true, nil
	case "model":
		return true, l.modelCommand(ctx, m, args)
	case "voice":
		return true, l.voiceCommand(ctx, m, args)
	case "queue":
		return true, l.queueCommand(ctx, m, args)
	case "restart":
		text, restart := l.restartCommand(m)
		l.reply(ctx, m, text) // before the stop begins
		if restart != nil {
			restart()
		}
		return true, nil
	case "usage":
		text, err := l.usageText(ctx, m, args)
		l.reply(ctx, m, text)
		return true, err
	}
	return false, nil
}

func (l *Loop) statusText(model, key string, n, consolidated, tokens int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Model: %s\n", model)
	fmt.Fprintf(&b, "Conversation: %s, %d messages (%d consolidated into memory)\n", key, n, consolidated)
	if w := l.cfg.ContextWindowTokens; w > 0 {
		fmt.Fprintf(&b, "Context: about %d of %d tokens (%d%%)", tokens, w, tokens*100/w)
	} else {
		fmt.Fprintf(&b, "Context: about %d tokens", tokens)
	}
	return b.String()
}

// PromptEstimator estimates the next prompt of a session in tokens (the
// memory consolidator implements it).
type PromptEstimator interface {
	EstimatePrompt(s *session.Session) int
}

// estimateTokens approximates the next prompt's size: the consolidator's
// estimate when there is one, else system prompt plus history at about 4
// characters per token.
func (l *Loop) estimateTokens(sess *session.Session) int {
	if e, ok := l.cfg.Consolidator.(PromptEstimator); ok {
		return e.EstimatePrompt(sess)
	}
	chars := utf8.RuneCountInString(l.cfg.Builder.SystemPrompt())
	for _, msg := range sess.History(0) {
		chars += utf8.RuneCountInString(msg.Text())
		for _, tc := range msg.ToolCalls {
			chars += len(tc.Function.Arguments) + len(tc.Function.Name)
		}
	}
	return chars / 4
}

// ErrSessionBusy is Reset's error for a conversation with a turn running
// or messages waiting.
var ErrSessionBusy = errors.New("agent: the conversation is answering or has messages waiting; stop it or try again when it is done")

// Reset sets the conversation key aside the way /new does (everything not
// yet consolidated goes into memory first, then the session is archived),
// for callers outside the chat such as the web workbench's delete. It
// refuses with ErrSessionBusy while the session has work in the loop; a
// message arriving while Reset runs is answered in the fresh session.
func (l *Loop) Reset(ctx context.Context, key string) error {
	l.mu.Lock()
	if l.workers[key] != nil {
		l.mu.Unlock()
		return ErrSessionBusy
	}
	// Reset holds the session's worker while it works: a message that
	// comes meanwhile waits in its queue, as behind a turn, and is
	// answered in the fresh session once hold is closed.
	w := l.newWorker(key)
	w.hold = make(chan struct{})
	w.foldOnly = true   // an emptied session has nothing to compact when idle
	delete(l.idle, key) // nor had the idle spell before it
	l.mu.Unlock()
	defer l.release(ctx, key, w)

	sess, err := l.cfg.Store.Load(ctx, key)
	if err != nil {
		return fmt.Errorf("agent: load %s: %w", key, err)
	}
	channel, chat := sess.Origin()
	if err := l.archive(consolidationContext(ctx, channel, chat, "", key, false), sess); err != nil {
		return fmt.Errorf("agent: archive %s: %w", key, err)
	}
	return nil
}

// release ends Reset's hold on the worker w of session key: the goroutine
// started for what came meanwhile goes on, or, if nothing came, the
// worker retires.
func (l *Loop) release(ctx context.Context, key string, w *worker) {
	l.mu.Lock()
	close(w.hold)
	w.hold = nil
	delete(l.queueChoices, key)
	if w.running {
		l.mu.Unlock()
		return
	}
	l.retire(ctx, key, w) // unlocks; nothing is queued or finished
}

// archive is /new: consolidate into memory (a failure there is logged, not
// fatal: the archive keeps the messages), then archive the session. ctx
// carries the consolidation's call context (consolidationContext), so the
// calls are charged to the conversation.
func (l *Loop) archive(ctx context.Context, sess *session.Session) error {
	if c := l.cfg.Consolidator; c != nil {
		if err := c.ArchiveAll(ctx, sess); err != nil {
			l.log.Warn("archiving to memory before /new failed", "session", sess.Key, "err", err)
		}
	}
	if err := l.cfg.Store.Archive(ctx, sess); err != nil {
		return err
	}
	if hooking(l.cfg.Hooks, HookSessionReset) {
		l.resetHooks(ctx, sess)
	}
	return nil
}

// compactKeep is how many of the latest messages /compact leaves as they
// are (about the last two exchanges).
const compactKeep = 4

// compactCommand is /compact: the conversation so far is folded into
// memory (the consolidation's summary keeps names, numbers, decisions and
// open tasks), the last exchanges stay, and the user is told what it saved.
func (l *Loop) compactCommand(ctx context.Context, m bus.Inbound) error {
	c := l.cfg.Consolidator
	if c == nil {
		l.reply(ctx, m, "Compaction is not available here.")
		return nil
	}
	sess, err := l.commandSession(ctx, m)
	if err != nil {
		return err
	}
	before := l.estimateTokens(sess)
	folded, err := c.Compact(consolidationContext(ctx, m.Channel, m.ChatID, m.SenderID, sess.Key, m.Admin), sess, compactKeep)
	if err != nil {
		l.reply(ctx, m, fmt.Sprintf("Sorry, compacting failed after folding %d messages; the rest is kept as it was.", folded))
		return err
	}
	if folded == 0 {
		l.reply(ctx, m, "Nothing to compact: the conversation is short, or already folded into memory.")
		return nil
	}
	after := l.estimateTokens(sess)
	l.reply(ctx, m, fmt.Sprintf("Compacted: %d messages folded into memory, the last exchanges kept. Context: about %d tokens, from %d.", folded, after, before))
	return nil
}

// restartCommand runs /restart for an admin: the reply goes out, running
// turns finish, and the gateway starts again and says so in this chat. A
// /restart replayed after that restart (it was journalled before the stop)
// only says the gateway is back.
func (l *Loop) restartCommand(m bus.Inbound) (reply string, restart func()) {
	switch {
	case !m.Admin:
		return "Only an admin can restart the gateway.", nil
	case l.cfg.Restart == nil:
		return "Restarting is not available here: restart the service instead.", nil
	case m.Replayed:
		return "The gateway has restarted.", nil
	}
	return "Restarting: answers in progress finish first; I will say when I am back.",
		func() { l.cfg.Restart(m.Channel, m.ChatID, m.Key()) }
}
