package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nanobot-go/nanobot/agent/memory"
	"github.com/nanobot-go/nanobot/bus"
)

// MemoryVersions is the consolidator's record of MEMORY.md versions (the
// memory package implements it): /dream-log and /dream-restore.
type MemoryVersions interface {
	Versions() ([]memory.Version, error)
	Restore(id string) error
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
