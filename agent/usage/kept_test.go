package usage

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Without per-chat or per-sender budgets the running totals do not grow
// with the chats of the month: they hold everything, each agent and each
// channel, however many chats spoke.
func TestRunningTotalsDoNotGrowWithChats(t *testing.T) {
	l := openTest(t, t.TempDir(), Options{})
	for i := range 500 {
		if _, err := l.Append(rec(fmt.Sprint(i), 10, 1)); err != nil {
			t.Fatal(err)
		}
	}
	// Day and month: everything, agent "main", channel "telegram".
	if got := len(l.day.totals) + len(l.mon.totals); got != 6 {
		t.Errorf("running totals after 500 chats: %d entries, want 6", got)
	}
	if got := l.Today(Scope{}); got.Calls != 500 {
		t.Errorf("today: %d calls, want 500", got.Calls)
	}
}

// Period sums a chat's or a sender's day and month from the files when the
// ledger keeps no running totals for them, and from those totals when a
// budget made it keep them; both give the same figures.
func TestPeriodOfChatAndSender(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC)}
	l := openTest(t, t.TempDir(), Options{Now: clock.Now})
	yesterday := rec("7", 100, 10)
	yesterday.Time = clock.Now().AddDate(0, 0, -1)
	for _, r := range []Record{yesterday, rec("7", 20, 2), rec("8", 5, 5)} {
		if _, err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	check := func(how string) {
		t.Helper()
		for _, s := range []Scope{{ScopeChat, "telegram:7"}, {ScopeSender, "telegram:u-7"}} {
			today, month, err := l.Period(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if today.Calls != 1 || today.Input != 20 || month.Calls != 2 || month.Input != 120 || month.Output != 12 {
				t.Errorf("%s, %v: today %+v, month %+v; want 1 call of 20 in today, 2 calls of 120 in, 12 out this month", how, s, today, month)
			}
		}
	}
	check("from the files")
	NewBudgets(l, Limits{PerChat: Budget{DailyTokens: 1000}, PerSender: Budget{DailyTokens: 1000}}, nil)
	check("kept for budgets")
}

// A per-chat budget set up after calls were recorded counts them: the
// ledger reads the month again when it starts keeping per-chat totals.
func TestBudgetCountsCallsBeforeIt(t *testing.T) {
	l := openTest(t, t.TempDir(), Options{})
	spend(t, l, "alice", 1000, 0)
	b := NewBudgets(l, Limits{PerChat: Budget{DailyTokens: 1000}}, nil)
	if _, err := b.Reserve(caller("alice"), Estimate{Input: 1}); err == nil {
		t.Fatal("alice's chat used its 1000 tokens before the budget was set up; Reserve let a call through")
	}
	if _, err := b.Reserve(caller("bob"), Estimate{Input: 1}); err != nil {
		t.Fatalf("bob's chat: %v", err)
	}
}
