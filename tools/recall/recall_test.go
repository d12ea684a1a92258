package recall

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/tools"
)

func workspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	mem := filepath.Join(ws, "memory")
	if err := os.MkdirAll(mem, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(mem, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("MEMORY.md", "# Memory\n\n## People\n\nAda's sister is called Grace; she lives in Lyon.\n\n## Preferences\n\nAda takes her coffee black.\n")
	write("HISTORY.md", "[2026-11-02 09:14] Ada planned a trip to Kyoto in April and asked for ryokan suggestions.\n\n[2026-11-20 18:40] Ada's laptop broke; she ordered a ThinkPad X1.\n")
	return ws
}

func conversations(msgs ...Message) Conversations {
	return func(ctx context.Context, max int64, fn func(Message) error) error {
		for _, m := range msgs {
			if err := fn(m); err != nil {
				return err
			}
		}
		return nil
	}
}

func search(t *testing.T, tl *Tool, query string, limit int) string {
	t.Helper()
	args := map[string]any{"query": query}
	if limit > 0 {
		args["limit"] = float64(limit)
	}
	res, err := tl.Execute(context.Background(), args)
	if err != nil {
		t.Fatal(err)
	}
	return res.Content
}

// TestSearchCitesItsSources: the best hit for each question is the one
// that answers it, from MEMORY.md, HISTORY.md or a conversation, and says
// where it comes from.
func TestSearchCitesItsSources(t *testing.T) {
	tl := New(Options{Workspace: workspace(t), Conversations: conversations(
		Message{Session: "telegram:42", Role: "user", Text: "My flight to Kyoto is JL 407 on April 3rd, seat 31A.", Time: "2026-11-05T10:00:00Z"},
		Message{Session: "telegram:42", Role: "assistant", Text: "Noted: JL 407 on April 3rd.", Time: "2026-11-05T10:00:02Z"},
		Message{Session: "slack:D1", Archived: true, Role: "user", Text: "The wifi password at the cabin is fjord-2291", Time: "2026-10-01T08:00:00Z"},
		Message{Session: "slack:D1", Role: "tool", Text: "flight results from a web search about Kyoto"},
		Message{Session: "web:x", Role: "user", Text: "我的护照号码是E12345678，下个月去北京出差。", Time: "2026-11-25T03:00:00Z"},
	)})
	for _, tt := range []struct{ query, first, source string }{
		{"what is Grace's city?", "Lyon", "[MEMORY.md § People]"},
		{"Kyoto flight number", "JL 407", "[conversation telegram:42, the user, 2026-11-05 10:00 UTC]"},
		{"laptop ThinkPad", "ThinkPad X1", "[HISTORY.md, 2026-11-20 18:40]"},
		{"cabin wifi password", "fjord-2291", "[conversation slack:D1 (archived), the user, 2026-10-01 08:00 UTC]"},
		{"护照号码", "E12345678", "[conversation web:x, the user, 2026-11-25 03:00 UTC]"},
	} {
		got := search(t, tl, tt.query, 1)
		if !strings.Contains(got, tt.first) || !strings.Contains(got, tt.source) {
			t.Errorf("%q: best hit\n%s\nwant %q from %s", tt.query, got, tt.first, tt.source)
		}
	}
	if got := search(t, tl, "flight", 0); strings.Contains(got, "web search about Kyoto") {
		t.Errorf("a tool result was searched:\n%s", got)
	}
	if got := search(t, tl, "submarine volcano", 0); !strings.HasPrefix(got, "Nothing found") {
		t.Errorf("no match: %q", got)
	}
	if _, err := tl.Execute(context.Background(), map[string]any{"query": "the of and"}); err == nil {
		t.Error("a query of stop words only was taken")
	}
}

// TestSearchLimitsAndSnippets: limit caps the results; a long message is
// cut to a snippet around the match.
func TestSearchLimitsAndSnippets(t *testing.T) {
	long := strings.Repeat("filler words about nothing in particular ", 40) + "the locker code is 4471 " + strings.Repeat("more filler after it ", 40)
	var msgs []Message
	for i := range 30 {
		msgs = append(msgs, Message{Session: "telegram:1", Role: "user", Text: "remember the locker please " + strings.Repeat("x", i)})
	}
	msgs = append(msgs, Message{Session: "telegram:1", Role: "user", Text: long})
	tl := New(Options{Workspace: t.TempDir(), Conversations: conversations(msgs...)})
	got := search(t, tl, "locker code 4471", 3)
	if n := strings.Count(got, "\n\n"); n != 3 {
		t.Errorf("%d results, want 3:\n%s", n, got)
	}
	if !strings.Contains(got, "locker code is 4471") || strings.Contains(got, strings.Repeat("filler words about nothing in particular ", 12)) {
		t.Errorf("the long message is not cut around its match:\n%s", got)
	}
}

// TestSearchReportsAWalkThatFails: a store that cannot be read is an
// error for the model, not an empty answer.
func TestSearchReportsAWalkThatFails(t *testing.T) {
	tl := New(Options{Workspace: t.TempDir(), Conversations: func(context.Context, int64, func(Message) error) error {
		return errors.New("disk on fire")
	}})
	if _, err := tl.Execute(context.Background(), map[string]any{"query": "anything"}); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("err = %v", err)
	}
}

// TestSearchKeepsOtherConversationsToAdmins: someone who is not an admin
// finds what was said in their own conversation, and nothing of anyone
// else's; an admin finds both.
func TestSearchKeepsOtherConversationsToAdmins(t *testing.T) {
	tl := New(Options{Workspace: t.TempDir(), Conversations: conversations(
		Message{Session: "telegram:42", Role: "user", Text: "my locker code is 4471"},
		Message{Session: "telegram:99", Role: "user", Text: "my locker code is 9983"},
	)})
	as := func(admin bool) string {
		ctx := tools.WithCallContext(context.Background(), tools.CallContext{SessionKey: "telegram:42", Admin: admin})
		res, err := tl.Execute(ctx, map[string]any{"query": "locker code"})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content
	}
	if got := as(false); !strings.Contains(got, "4471") || strings.Contains(got, "9983") {
		t.Errorf("a non-admin's search:\n%s", got)
	}
	if got := as(true); !strings.Contains(got, "4471") || !strings.Contains(got, "9983") {
		t.Errorf("an admin's search:\n%s", got)
	}
}
