package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/bus"
)

// usageText answers /usage: this conversation (since it began or the last
// /new), today and this month for the chat; with "all" (admins only)
// everyone's day and month, by channel, with what the bot did on its own
// shown apart.
func (l *Loop) usageText(ctx context.Context, m bus.Inbound, args string) (string, error) {
	led := l.cfg.Usage
	if led == nil {
		return "Usage is not recorded here.", nil
	}
	if strings.EqualFold(strings.TrimSpace(args), "all") {
		if !m.Admin {
			return "Only an admin can see everyone's usage.", nil
		}
		return l.usageAll(ctx, led)
	}
	key := m.Key()
	var since time.Time
	if sess, err := l.cfg.Store.Load(ctx, key); err == nil {
		since = sess.Created()
	}
	conv, err := led.Summary(ctx, usage.Filter{Since: since, Session: key}, usage.GroupNone)
	if err != nil {
		return "Sorry, I could not read the usage ledger.", err
	}
	today, month, err := led.Period(ctx, usage.Scope{Kind: usage.ScopeChat, ID: key})
	if err != nil {
		return "Sorry, I could not read the usage ledger.", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Usage of this chat (tokens, cost):\n")
	fmt.Fprintf(&b, "This conversation: %s\n", usage.Line(conv.Total.Totals))
	fmt.Fprintf(&b, "Today: %s\n", usage.Line(today))
	fmt.Fprintf(&b, "This month: %s\n", usage.Line(month))
	fmt.Fprintf(&b, "Prices as of %s; \"?\" is a model without a known price.", usage.PricesAsOf)
	return b.String(), nil
}

func (l *Loop) usageAll(ctx context.Context, led *usage.Ledger) (string, error) {
	now := time.Now().In(led.Location())
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, led.Location())
	s, err := led.Summary(ctx, usage.Filter{Since: month}, usage.GroupChannel)
	if err != nil {
		return "Sorry, I could not read the usage ledger.", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Usage of everyone (tokens, cost):\n")
	fmt.Fprintf(&b, "Today: %s\n", usage.Line(led.Today(usage.Scope{})))
	fmt.Fprintf(&b, "This month: %s\n", usage.Line(led.ThisMonth(usage.Scope{})))
	for _, r := range s.Rows {
		fmt.Fprintf(&b, "  %s: %s\n", r.Key, usage.Line(r.Totals))
	}
	for _, src := range []string{"heartbeat", "cron", "subagent", "api", usage.SourceConsolidation} {
		if t, ok := s.Sources[src]; ok {
			fmt.Fprintf(&b, "  of which %s: %s\n", src, usage.Line(t))
		}
	}
	fmt.Fprintf(&b, "Prices as of %s; \"?\" is a model without a known price.", usage.PricesAsOf)
	return b.String(), nil
}
