package usage

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func caller(sender string) Caller {
	return Caller{Agent: "main", Channel: "telegram", Sender: sender, Session: "telegram:" + sender, Provider: "openai", Model: "gpt-4o"}
}

func spend(t *testing.T, l *Ledger, sender string, in, out int64) {
	t.Helper()
	r := rec(sender, in, out)
	r.Sender, r.Session = sender, "telegram:"+sender
	if _, err := l.Append(r); err != nil {
		t.Fatal(err)
	}
}

// A budget is used up when the total reaches the cap: one token under
// lets the call through, exactly at the cap and one over refuse it.
func TestBudgetBoundary(t *testing.T) {
	const limit = 1000
	for _, tc := range []struct {
		name   string
		used   int64
		wantOK bool
	}{
		{"one under", limit - 1, true},
		{"exactly at the limit", limit, false},
		{"one over", limit + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := openTest(t, t.TempDir(), Options{})
			b := NewBudgets(l, Limits{PerSender: Budget{DailyTokens: limit}}, nil)
			spend(t, l, "alice", tc.used, 0)
			r, err := b.Reserve(caller("alice"), Estimate{Input: 100, Output: 100})
			if got := err == nil; got != tc.wantOK {
				t.Fatalf("used %d of %d: allowed = %v, want %v (err %v)", tc.used, limit, got, tc.wantOK, err)
			}
			r.Release()
			var be *BudgetError
			if !tc.wantOK && (!errors.As(err, &be) || be.Scope != (Scope{ScopeSender, "telegram:alice"}) || !be.Tokens || be.Period != "daily") {
				t.Fatalf("err = %#v, want the daily token budget of telegram:alice", err)
			}
			// Another sender has a budget of their own.
			if _, err := b.Reserve(caller("bob"), Estimate{Input: 100}); err != nil {
				t.Fatalf("bob: %v", err)
			}
		})
	}
}

func TestCostBudgetBoundary(t *testing.T) {
	prices := NewPrices(map[string]map[string]Price{"openai": {"gpt-4o": {Input: 1_000_000, Output: 0}}}) // $1 a token
	for _, tc := range []struct {
		used   int64
		wantOK bool
	}{{4, true}, {5, false}, {6, false}} {
		l := openTest(t, t.TempDir(), Options{Prices: prices})
		b := NewBudgets(l, Limits{Global: Budget{MonthlyCostUSD: 5}}, nil)
		spend(t, l, "alice", tc.used, 0)
		_, err := b.Reserve(caller("alice"), Estimate{Input: 1})
		if got := err == nil; got != tc.wantOK {
			t.Errorf("spent $%d of $5: allowed = %v, want %v (err %v)", tc.used, got, tc.wantOK, err)
		}
	}
}

// 50 turns ask at the same moment, before any of them has settled: the
// reservations stop the budget at the cap instead of letting all in.
func TestBudgetConcurrentTurnsCannotOvershoot(t *testing.T) {
	const (
		limit = 10_000
		est   = 1000
		turns = 50
	)
	l := openTest(t, t.TempDir(), Options{})
	b := NewBudgets(l, Limits{Global: Budget{DailyTokens: limit}}, nil)
	var (
		start    = make(chan struct{})
		asked    sync.WaitGroup
		admitted atomic.Int64
		wg       sync.WaitGroup
	)
	asked.Add(turns)
	for i := range turns {
		wg.Go(func() {
			<-start
			r, err := b.Reserve(caller("u"+strings.Repeat("x", i)), Estimate{Input: est / 2, Output: est / 2})
			asked.Done()
			asked.Wait() // every turn has asked before any call settles
			if err != nil {
				return
			}
			admitted.Add(1)
			spend(t, l, "u", est, 0) // the call used what it was estimated at
			r.Release()
		})
	}
	close(start)
	wg.Wait()
	got := l.Today(Scope{}).Tokens()
	if n := admitted.Load(); n != limit/est {
		t.Errorf("admitted %d calls, want %d", n, limit/est)
	}
	if got > limit+est {
		t.Errorf("spent %d tokens with a cap of %d: more than one call over", got, limit)
	}
}

// Turns that keep calling, with calls using up to 1.5 times their
// estimate: the total stays within the documented bound, the cap plus
// the turns in flight times one call's maximum.
func TestBudgetOvershootBound(t *testing.T) {
	const (
		limit   = 50_000
		est     = 1000
		maxCall = 1500
		turns   = 20
	)
	l := openTest(t, t.TempDir(), Options{})
	b := NewBudgets(l, Limits{Global: Budget{DailyTokens: limit}}, nil)
	var wg sync.WaitGroup
	for i := range turns {
		wg.Go(func() {
			for n := 0; ; n++ {
				r, err := b.Reserve(caller("u"), Estimate{Input: est})
				if err != nil {
					return
				}
				spend(t, l, "u", int64(est+(i*37+n*101)%(maxCall-est+1)), 0)
				r.Release()
			}
		})
	}
	wg.Wait()
	if got := l.Today(Scope{}).Tokens(); got < limit || got > limit+turns*maxCall {
		t.Errorf("spent %d tokens, want %d to %d", got, limit, limit+turns*maxCall)
	}
}

// The daily budget resets at midnight of the ledger's timezone, not UTC's;
// the monthly one does not.
func TestBudgetResetsAtMidnightInTimezone(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Skip("no timezone data:", err)
	}
	clock := &fakeClock{t: time.Date(2026, 12, 3, 14, 59, 0, 0, time.UTC)} // 23:59 in Tokyo
	l := openTest(t, t.TempDir(), Options{Location: tokyo, Now: clock.Now})
	b := NewBudgets(l, Limits{PerSender: Budget{DailyTokens: 100, MonthlyTokens: 150}}, nil)
	spend(t, l, "alice", 100, 0)

	_, err = b.Reserve(caller("alice"), Estimate{Input: 10})
	var be *BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("at 23:59 with the day's budget spent: err = %v, want a BudgetError", err)
	}
	if want := time.Date(2026, 12, 4, 0, 0, 0, 0, tokyo); !be.ResetsAt.Equal(want) || be.ResetsAt.Location() != tokyo {
		t.Errorf("resets at %v, want %v", be.ResetsAt, want)
	}

	clock.Set(time.Date(2026, 12, 3, 15, 0, 1, 0, time.UTC)) // 00:00:01 in Tokyo, still Dec 3 in UTC
	r, err := b.Reserve(caller("alice"), Estimate{Input: 10})
	if err != nil {
		t.Fatalf("after midnight in Tokyo: %v", err)
	}
	r.Release()
	spend(t, l, "alice", 50, 0)
	_, err = b.Reserve(caller("alice"), Estimate{Input: 10})
	if !errors.As(err, &be) || be.Period != "monthly" {
		t.Fatalf("with the month's budget spent: err = %v, want the monthly budget", err)
	}
	if want := time.Date(2027, 1, 1, 0, 0, 0, 0, tokyo); !be.ResetsAt.Equal(want) {
		t.Errorf("monthly budget resets at %v, want %v", be.ResetsAt, want)
	}
}

func TestBudgetUserMessage(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no timezone data:", err)
	}
	reset := time.Date(2026, 12, 4, 0, 0, 0, 0, berlin)
	for _, tc := range []struct {
		err  BudgetError
		want string
	}{
		{BudgetError{Scope: Scope{ScopeSender, "telegram:1"}, Period: "daily", Tokens: true, Limit: 200000, ResetsAt: reset},
			"You have reached your daily token budget (200,000 tokens). It resets at 00:00 on Fri 4 Dec 2026 (Europe/Berlin). No model was called for this message."},
		{BudgetError{Scope: Scope{}, Period: "monthly", Limit: 5, ResetsAt: reset},
			"The assistant has reached its monthly cost budget ($5.00). It resets at 00:00 on Fri 4 Dec 2026 (Europe/Berlin). No model was called for this message."},
		{BudgetError{Scope: Scope{ScopeAgent, "work"}, Period: "daily", Limit: 2.5, ResetsAt: reset},
			`The agent "work" has reached its daily cost budget ($2.50). It resets at 00:00 on Fri 4 Dec 2026 (Europe/Berlin). No model was called for this message.`},
		{BudgetError{Scope: Scope{ScopeChat, "slack:C1"}, Period: "daily", Tokens: true, Limit: 1000, ResetsAt: reset},
			"This chat has reached its daily token budget (1,000 tokens). It resets at 00:00 on Fri 4 Dec 2026 (Europe/Berlin). No model was called for this message."},
	} {
		if got := tc.err.UserMessage(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}

func TestBudgetExempt(t *testing.T) {
	l := openTest(t, t.TempDir(), Options{})
	spend(t, l, "owner", 500, 0)
	lim := Limits{Global: Budget{DailyTokens: 100}, Exempt: []string{"telegram:owner"}}
	b := NewBudgets(l, lim, nil)
	if _, err := b.Reserve(caller("owner"), Estimate{Input: 10}); err != nil {
		t.Errorf("exempt sender: %v", err)
	}
	admin := caller("webadmin")
	admin.Admin = true
	if _, err := b.Reserve(admin, Estimate{Input: 10}); err == nil {
		t.Error("an admin was let through although exemptAdmins is off")
	}
	lim.ExemptAdmins = true
	b = NewBudgets(l, lim, nil)
	if _, err := b.Reserve(admin, Estimate{Input: 10}); err != nil {
		t.Errorf("admin with exemptAdmins: %v", err)
	}
	if _, err := b.Reserve(caller("stranger"), Estimate{Input: 10}); err == nil {
		t.Error("a stranger was let through the used-up global budget")
	}
}

// A model without a price cannot be held to a cost budget: its calls go
// through on token budgets alone, and the operator is warned once.
func TestCostBudgetUnpricedModel(t *testing.T) {
	l := openTest(t, t.TempDir(), Options{})
	var logs bytes.Buffer
	b := NewBudgets(l, Limits{Global: Budget{DailyCostUSD: 0.01, DailyTokens: 1000}}, slog.New(slog.NewTextHandler(&logs, nil)))
	c := caller("alice")
	c.Provider, c.Model = "custom", "my-finetune"
	for range 3 {
		r, err := b.Reserve(c, Estimate{Input: 100})
		if err != nil {
			t.Fatal(err)
		}
		r.Release()
	}
	if n := strings.Count(logs.String(), "price is unknown"); n != 1 {
		t.Errorf("warned %d times, want once:\n%s", n, logs.String())
	}
	spend(t, l, "alice", 1000, 0)
	if _, err := b.Reserve(c, Estimate{Input: 100}); err == nil {
		t.Error("the token budget did not hold for an unpriced model")
	}
}

// The check before every provider call: four budgets, two periods.
func BenchmarkReserve(b *testing.B) {
	l, err := Open(b.Context(), b.TempDir(), Options{Location: time.UTC})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	bud := NewBudgets(l, Limits{
		Global: Budget{DailyCostUSD: 100, MonthlyTokens: 1e9}, PerSender: Budget{DailyTokens: 1e9},
		PerChat: Budget{DailyTokens: 1e9}, PerAgent: map[string]Budget{"main": {DailyTokens: 1e9}},
	}, nil)
	c := caller("alice")
	b.ReportAllocs()
	for b.Loop() {
		r, err := bud.Reserve(c, Estimate{Input: 1000, Output: 1000})
		if err != nil {
			b.Fatal(err)
		}
		r.Release()
	}
}

// TestBudgetExemptNamesSendersAsEverywhere: limits.exempt writes a sender
// as allowFrom does, so "telegram:123456789" (the form the docs show)
// exempts a Telegram user who has a username ("123456789|alice"), and so
// do "telegram:alice" and "telegram:@Alice"; another channel's id does not.
func TestBudgetExemptNamesSendersAsEverywhere(t *testing.T) {
	l := openTest(t, t.TempDir(), Options{})
	spend(t, l, "someone", 500, 0)
	withName := Caller{Channel: "telegram", Sender: "123456789|alice"}
	for _, tc := range []struct {
		entry string
		want  bool
	}{
		{"telegram:123456789", true},
		{"telegram:alice", true},
		{"telegram:@Alice", true},
		{"discord:123456789", false},
		{"telegram:12345678", false},
	} {
		b := NewBudgets(l, Limits{Global: Budget{DailyTokens: 100}, Exempt: []string{tc.entry}}, nil)
		if got := b.Exempt(withName); got != tc.want {
			t.Errorf("exempt %q, sender telegram %q: %v, want %v", tc.entry, withName.Sender, got, tc.want)
		}
	}
}

// A sub-cent cost budget is shown as what it is, not "$0.00".
func TestSubCentBudgetShown(t *testing.T) {
	e := &BudgetError{Period: "daily", Limit: 0.001, Used: 0.0012}
	if msg := e.UserMessage(); !strings.Contains(msg, "$0.0010") {
		t.Errorf("message %q", msg)
	}
}
