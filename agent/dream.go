package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/agent/memory"
	"github.com/nanobot-go/nanobot/bus"
)

// MemoryVersions is the consolidator's record of MEMORY.md versions (the
// memory package implements it): /dream-log and /dream-restore.
type MemoryVersions interface {
	Versions() ([]memory.Version, error)
	Restore(id string) error
}

// Dreamer tidies long-term memory (the memory package implements it):
// /dream, /dream-prompt and the scheduled dream.
type Dreamer interface {
	Dream(ctx context.Context) (changed bool, err error)
	DreamInstructions() (text string, custom bool)
	SetDreamInstructions(text string) error
}

// dream is /dream: admins only, since memory is the agent's for every
// chat and a dream is a model call.
func (l *Loop) dream(ctx context.Context, m bus.Inbound) error {
	d, ok := l.cfg.Consolidator.(Dreamer)
	switch {
	case !ok:
		l.reply(ctx, m, "Dreaming is not available here.")
		return nil
	case !m.Admin:
		l.reply(ctx, m, "Only an admin can start a dream.")
		return nil
	}
	changed, err := d.Dream(consolidationContext(ctx, m.Channel, m.ChatID, m.SenderID, m.Key(), m.Admin))
	switch {
	case err != nil:
		l.reply(ctx, m, "Sorry, the dream failed; memory is as it was.")
		return err
	case changed:
		l.reply(ctx, m, "Memory tidied. The previous version is kept: /dream-log lists it, /dream-restore puts it back.")
	default:
		l.reply(ctx, m, "Memory needed no change (or there is none yet).")
	}
	return nil
}

// dreamPrompt is /dream-prompt: shows the dream's instructions; an admin
// sets them with /dream-prompt <text> and goes back to the built-in ones
// with /dream-prompt reset.
func (l *Loop) dreamPrompt(ctx context.Context, m bus.Inbound, args string) error {
	d, ok := l.cfg.Consolidator.(Dreamer)
	if !ok {
		l.reply(ctx, m, "Dreaming is not available here.")
		return nil
	}
	args = strings.TrimSpace(args)
	if args == "" {
		text, custom := d.DreamInstructions()
		which := "built-in"
		if custom {
			which = "set by /dream-prompt"
		}
		l.reply(ctx, m, fmt.Sprintf("Dream instructions (%s):\n\n%s", which, text))
		return nil
	}
	if !m.Admin {
		l.reply(ctx, m, "Only an admin can change the dream instructions.")
		return nil
	}
	if strings.EqualFold(args, "reset") {
		args = ""
	}
	if err := d.SetDreamInstructions(args); err != nil {
		l.reply(ctx, m, "Sorry, the instructions could not be saved.")
		return err
	}
	if args == "" {
		l.reply(ctx, m, "Dream instructions back to the built-in ones.")
	} else {
		l.reply(ctx, m, "Dream instructions saved; the next dream follows them.")
	}
	return nil
}

// DreamEvery dreams every interval until ctx ends (interval <= 0: never).
// A failed dream is logged; the next one tries again.
func (l *Loop) DreamEvery(ctx context.Context, interval time.Duration) {
	d, ok := l.cfg.Consolidator.(Dreamer)
	if interval <= 0 || !ok {
		return
	}
	every(ctx, interval, func() {
		changed, err := d.Dream(ctx)
		switch {
		case err != nil:
			l.log.Warn("scheduled dream failed", "err", err)
		case changed:
			l.log.Info("memory tidied by the scheduled dream")
		}
	})
}

// dreamLog is /dream-log: the kept versions of MEMORY.md, newest first.
func (l *Loop) dreamLog(ctx context.Context, m bus.Inbound) error {
	mv, ok := l.cfg.Consolidator.(MemoryVersions)
	if !ok {
		l.reply(ctx, m, "Memory versions are not kept here.")
		return nil
	}
	vs, err := mv.Versions()
	if err != nil {
		l.reply(ctx, m, "Sorry, I could not read the memory versions.")
		return err
	}
	if len(vs) == 0 {
		l.reply(ctx, m, "No earlier versions of long-term memory yet: one is kept each time memory is rewritten.")
		return nil
	}
	var b strings.Builder
	b.WriteString("Earlier versions of long-term memory (MEMORY.md), newest first; /dream-restore <version> puts one back:\n")
	for _, v := range vs {
		fmt.Fprintf(&b, "%s — replaced %s, %d bytes\n", v.ID, v.Saved.Format("2006-01-02 15:04 UTC"), v.Bytes)
	}
	l.reply(ctx, m, strings.TrimRight(b.String(), "\n"))
	return nil
}

// dreamRestore is /dream-restore <version>: admins only, since memory is
// the agent's for every chat.
func (l *Loop) dreamRestore(ctx context.Context, m bus.Inbound, id string) error {
	mv, ok := l.cfg.Consolidator.(MemoryVersions)
	switch {
	case !ok:
		l.reply(ctx, m, "Memory versions are not kept here.")
		return nil
	case !m.Admin:
		l.reply(ctx, m, "Only an admin can restore memory.")
		return nil
	case strings.TrimSpace(id) == "":
		l.reply(ctx, m, "Usage: /dream-restore <version>, as /dream-log lists them.")
		return nil
	}
	err := mv.Restore(id)
	switch {
	case errors.Is(err, memory.ErrNoVersion):
		l.reply(ctx, m, "No memory version "+strings.TrimSpace(id)+" (see /dream-log).")
		return nil
	case err != nil:
		l.reply(ctx, m, "Sorry, restoring memory failed; it is as it was.")
		return err
	}
	l.reply(ctx, m, "Long-term memory restored to version "+strings.TrimSpace(id)+". The memory it replaced is kept as a version too.")
	return nil
}
