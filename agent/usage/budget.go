package usage

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/bus"
)

// Budget caps what one scope may spend in a day and in a month (the
// ledger's days and months). A zero field is no cap.
type Budget struct {
	DailyTokens, MonthlyTokens   int64
	DailyCostUSD, MonthlyCostUSD float64
}

func (b Budget) empty() bool { return b == Budget{} }

func (b Budget) hasCost() bool { return b.DailyCostUSD > 0 || b.MonthlyCostUSD > 0 }

// Limits are the budgets of an instance.
type Limits struct {
	// Global caps all calls together.
	Global Budget
	// PerSender caps each sender ("channel:sender") on its own.
	PerSender Budget
	// PerChat caps each chat (session key) on its own.
	PerChat Budget
	// PerAgent caps the named agents.
	PerAgent map[string]Budget
	// Exempt senders ("channel:sender", a sender written as everywhere:
	// bus.ChannelSenderMatches) are never limited.
	Exempt []string
	// ExemptAdmins also exempts senders their channel vouches for as
	// admins (Caller.Admin).
	ExemptAdmins bool
}

// Empty is true when no budget is set.
func (l Limits) Empty() bool {
	if !l.Global.empty() || !l.PerSender.empty() || !l.PerChat.empty() {
		return false
	}
	for _, b := range l.PerAgent {
		if !b.empty() {
			return false
		}
	}
	return true
}

// Caller says whose provider call is being checked, in the ledger's terms
// (the fields of the Record the call will produce).
type Caller struct {
	Agent, Channel, Sender, Session string
	// Admin is set when the channel vouches for the sender as an admin.
	Admin           bool
	Provider, Model string
}

// Estimate is what one call may use at most: the prompt as counted
// before sending, and the reply's token cap.
type Estimate struct {
	Input, Output int64
}

// Budgets enforces Limits over a Ledger's running totals. A call is let
// through while every budget that applies to it is under its cap, counting
// the ledger's totals plus what the calls in flight reserved; the
// reservation is released once the call's real usage is in the ledger.
//
// Concurrency: safe for concurrent use. Checks and reservations are
// serialised by one mutex; the ledger is read under it (lock order:
// Budgets, then Ledger).
type Budgets struct {
	led *Ledger
	lim Limits
	log *slog.Logger

	mu       sync.Mutex
	reserved map[Scope]held
	warned   map[string]bool // provider/model pairs warned about as unpriced
}

type held struct {
	tokens int64
	cost   float64
}

// NewBudgets enforces lim over the running totals of led, which it asks
// to keep per-chat and per-sender totals when lim caps those (reading the
// month's files again). log receives the warning about models whose price
// is unknown (nil discards).
func NewBudgets(led *Ledger, lim Limits, log *slog.Logger) *Budgets {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &Budgets{led: led, lim: lim, log: log,
		reserved: map[Scope]held{}, warned: map[string]bool{}}
	var kinds []ScopeKind
	if !lim.PerChat.empty() {
		kinds = append(kinds, ScopeChat)
	}
	if !lim.PerSender.empty() {
		kinds = append(kinds, ScopeSender)
	}
	if err := led.keep(context.Background(), kinds...); err != nil {
		// The ledger read these files a moment ago in Open; if they
		// cannot be read now, the totals count from here on.
		log.Error("reading the month's usage for per-chat and per-sender budgets failed; they count from now", "err", err)
	}
	return b
}

// Reservation holds a call's estimate against its budgets until Release.
type Reservation struct {
	b      *Budgets
	scopes []Scope
	h      held
	once   sync.Once
}

// Release gives the reservation back. Call it after the call's record was
// appended to the ledger (so the call is never counted by neither), also
// when the call failed. Safe to call more than once; nil does nothing.
func (r *Reservation) Release() {
	if r == nil {
		return
	}
	r.once.Do(func() {
		r.b.mu.Lock()
		defer r.b.mu.Unlock()
		for _, s := range r.scopes {
			h := r.b.reserved[s]
			h.tokens -= r.h.tokens
			h.cost -= r.h.cost
			if h.tokens <= 0 && h.cost <= 1e-12 {
				delete(r.b.reserved, s)
				continue
			}
			r.b.reserved[s] = h
		}
	})
}

// check is one budget that applies to a call.
type check struct {
	scope  Scope
	budget Budget
}

// checks lists the budgets of c, the most personal first: that is the
// one the user is told about when several are used up.
func (b *Budgets) checks(c Caller) []check {
	var out []check
	if c.Sender != "" && !b.lim.PerSender.empty() {
		out = append(out, check{Scope{ScopeSender, c.Channel + ":" + c.Sender}, b.lim.PerSender})
	}
	if c.Session != "" && !b.lim.PerChat.empty() {
		out = append(out, check{Scope{ScopeChat, c.Session}, b.lim.PerChat})
	}
	if ab, ok := b.lim.PerAgent[c.Agent]; ok && !ab.empty() {
		out = append(out, check{Scope{ScopeAgent, c.Agent}, ab})
	}
	if !b.lim.Global.empty() {
		out = append(out, check{Scope{}, b.lim.Global})
	}
	return out
}

// Exempt reports whether c is never limited.
func (b *Budgets) Exempt(c Caller) bool {
	if b.lim.ExemptAdmins && c.Admin {
		return true
	}
	for _, e := range b.lim.Exempt {
		if bus.ChannelSenderMatches(e, c.Channel, c.Sender) {
			return true
		}
	}
	return false
}

// Reserve checks c's budgets before a call that may use est. When one is
// used up it returns a *BudgetError and the call must not be made.
// Otherwise the estimate is held against every budget of c until the
// returned Reservation is released.
//
// A budget is used up when its total (ledger plus reservations) has
// reached the cap; a call that starts under the cap may take it over by
// at most what that call uses. Calls to a model whose price is unknown
// are held against token budgets only (cost budgets cannot see them; a
// warning is logged once per model).
func (b *Budgets) Reserve(c Caller, est Estimate) (*Reservation, error) {
	if b == nil || b.Exempt(c) {
		return nil, nil
	}
	checks := b.checks(c)
	if len(checks) == 0 {
		return nil, nil
	}
	h := held{tokens: est.Input + est.Output}
	rec := Record{Provider: c.Provider, Model: c.Model, Input: est.Input, Output: est.Output}
	cost := b.led.opts.Prices.Cost(&rec)
	if cost != nil {
		h.cost = *cost
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	if cost == nil {
		b.warnUnpriced(c, checks)
	}
	now := b.led.opts.Now().In(b.led.opts.Location)
	for _, ch := range checks {
		if err := b.over(ch, now); err != nil {
			return nil, err
		}
	}
	r := &Reservation{b: b, h: h}
	for _, ch := range checks {
		r.scopes = append(r.scopes, ch.scope)
		cur := b.reserved[ch.scope]
		cur.tokens += h.tokens
		cur.cost += h.cost
		b.reserved[ch.scope] = cur
	}
	return r, nil
}

// over returns the error for the first used-up cap of ch. Called with mu
// held.
func (b *Budgets) over(ch check, now time.Time) error {
	res := b.reserved[ch.scope]
	day, month := b.led.Today(ch.scope), b.led.ThisMonth(ch.scope)
	loc := b.led.opts.Location
	tomorrow := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, loc)
	nextMonth := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, loc)
	for _, p := range []struct {
		period   string
		t        Totals
		tokens   int64
		cost     float64
		resetsAt time.Time
	}{
		{"daily", day, ch.budget.DailyTokens, ch.budget.DailyCostUSD, tomorrow},
		{"monthly", month, ch.budget.MonthlyTokens, ch.budget.MonthlyCostUSD, nextMonth},
	} {
		if used := p.t.Tokens() + res.tokens; p.tokens > 0 && used >= p.tokens {
			return &BudgetError{Scope: ch.scope, Period: p.period, Tokens: true, Limit: float64(p.tokens), Used: float64(used), ResetsAt: p.resetsAt}
		}
		if used := p.t.CostUSD + res.cost; p.cost > 0 && used >= p.cost {
			return &BudgetError{Scope: ch.scope, Period: p.period, Limit: p.cost, Used: used, ResetsAt: p.resetsAt}
		}
	}
	return nil
}

// warnUnpriced logs once per model that cost budgets cannot count its
// calls. Called with mu held.
func (b *Budgets) warnUnpriced(c Caller, checks []check) {
	key := c.Provider + "/" + c.Model
	if b.warned[key] {
		return
	}
	for _, ch := range checks {
		if ch.budget.hasCost() {
			b.warned[key] = true
			b.log.Warn("cost budgets cannot count this model: its price is unknown; only token budgets apply to it (set providers.<name>.prices)",
				"provider", c.Provider, "model", c.Model)
			return
		}
	}
}

// BudgetError says which budget is used up. The call was not made.
type BudgetError struct {
	// Scope is what the budget covers: everything, an agent, a chat or a
	// sender.
	Scope Scope
	// Period is "daily" or "monthly".
	Period string
	// Tokens is set for a token budget (Limit and Used are tokens); else
	// it is a cost budget (US dollars).
	Tokens      bool
	Limit, Used float64
	// ResetsAt is when the period ends, in the ledger's location.
	ResetsAt time.Time
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("usage: %s %s budget of %s reached (%s of %s); resets %s",
		e.Period, e.kind(), e.scopeName(), e.amount(e.Used), e.amount(e.Limit), e.ResetsAt.Format("2006-01-02 15:04 MST"))
}

// UserMessage is what the user is told, in one message: which budget, and
// when it resets.
func (e *BudgetError) UserMessage() string {
	var who string
	switch e.Scope.Kind {
	case ScopeSender:
		who = "You have reached your"
	case ScopeChat:
		who = "This chat has reached its"
	case ScopeAgent:
		who = "The agent " + strconv.Quote(e.Scope.ID) + " has reached its"
	default:
		who = "The assistant has reached its"
	}
	return fmt.Sprintf("%s %s %s budget (%s). It resets at %s. No model was called for this message.",
		who, e.Period, e.kind(), e.amount(e.Limit), resetText(e.ResetsAt))
}

func (e *BudgetError) kind() string {
	if e.Tokens {
		return "token"
	}
	return "cost"
}

func (e *BudgetError) scopeName() string {
	switch e.Scope.Kind {
	case ScopeSender:
		return "sender " + e.Scope.ID
	case ScopeChat:
		return "chat " + e.Scope.ID
	case ScopeAgent:
		return "agent " + e.Scope.ID
	case ScopeChannel:
		return "channel " + e.Scope.ID
	}
	return "the instance"
}

func (e *BudgetError) amount(v float64) string {
	if e.Tokens {
		return groupThousands(int64(v)) + " tokens"
	}
	return formatUSD(v) // a sub-cent budget is not "$0.00"
}

// resetText is "00:00 on Fri 4 Dec 2026 (Europe/Berlin)"; a location
// without an IANA name shows its zone abbreviation.
func resetText(t time.Time) string {
	zone := t.Location().String()
	if zone == "Local" || zone == "" {
		zone, _ = t.Zone()
	}
	return t.Format("15:04 on Mon 2 Jan 2006") + " (" + zone + ")"
}

// groupThousands writes 200000 as "200,000".
func groupThousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
