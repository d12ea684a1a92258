package sessions

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/tools"
)

type fakeSource map[string]struct {
	sum  Summary
	msgs []Message
}

func (f fakeSource) List(context.Context) ([]Summary, error) {
	var out []Summary
	for _, s := range f {
		out = append(out, s.sum)
	}
	return out, nil
}

func (f fakeSource) Read(_ context.Context, key string) (Summary, []Message, error) {
	s, ok := f[key]
	if !ok {
		return Summary{}, nil, ErrNotFound
	}
	return s.sum, s.msgs, nil
}

// Walk gives the conversations newest first, as the store's files are.
func (f fakeSource) Walk(_ context.Context, _ int64, fn func(string, Message) error) error {
	all, _ := f.List(context.Background())
	slices.SortFunc(all, func(a, b Summary) int { return b.Updated.Compare(a.Updated) })
	for _, s := range all {
		for _, m := range f[s.Key].msgs {
			if err := fn(s.Key, m); err != nil {
				return err
			}
		}
	}
	return nil
}

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func source() fakeSource {
	f := fakeSource{}
	add := func(key, title string, age time.Duration, texts ...string) {
		ch, chat, _ := strings.Cut(key, ":")
		var msgs []Message
		for i, t := range texts {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			msgs = append(msgs, Message{Role: role, Text: t, Time: t0.Add(-age)})
		}
		f[key] = struct {
			sum  Summary
			msgs []Message
		}{Summary{Key: key, Title: title, Channel: ch, Chat: chat, Updated: t0.Add(-age), Messages: len(msgs)}, msgs}
	}
	add("telegram:1", "owner's chat", 0, "hi")
	add("telegram:-100", "family group", time.Hour, "when is dinner?", "Not decided yet.", "ask dad about the Zanzibar trip")
	add("slack:C9", "work", 2*time.Hour, "deploy the release on Friday", "Noted: Friday.")
	return f
}

func ownerCtx(admin bool) context.Context {
	return tools.WithCallContext(context.Background(), tools.CallContext{Channel: "telegram", ChatID: "1", SessionKey: "telegram:1", Admin: admin})
}

func exec(t *testing.T, tool tools.Tool, ctx context.Context, args map[string]any) (string, error) {
	t.Helper()
	r := tools.NewRegistry()
	if err := r.Register(tool); err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(ctx, tool.Name(), args)
	return res.Content, err
}

func TestOwnerOnly(t *testing.T) {
	var sent []bus.Inbound
	for _, tool := range All(source(), func(_ context.Context, m bus.Inbound) error { sent = append(sent, m); return nil }) {
		args := map[string]any{"session_key": "slack:C9", "query": "x", "to": "slack:C9", "content": "x"}
		if _, err := exec(t, tool, ownerCtx(false), args); err == nil || !strings.Contains(err.Error(), "only the owner") {
			t.Errorf("%s for a non-admin: %v", tool.Name(), err)
		}
	}
	if len(sent) != 0 {
		t.Errorf("a non-admin's call sent %v", sent)
	}
}

func TestListReadSearch(t *testing.T) {
	tools := All(source(), nil)
	if len(tools) != 3 {
		t.Fatalf("%d tools without a sender, want 3", len(tools))
	}
	list, read, search := tools[0], tools[1], tools[2]
	out, err := exec(t, list, ownerCtx(true), map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "telegram:1 ") || strings.Index(out, "telegram:-100") > strings.Index(out, "slack:C9") || !strings.Contains(out, "External content") {
		t.Errorf("list (current left out, newest first, marked untrusted):\n%s", out)
	}
	out, _ = exec(t, list, ownerCtx(true), map[string]any{"channel": "slack"})
	if strings.Contains(out, "telegram") || !strings.Contains(out, "slack:C9") {
		t.Errorf("list by channel:\n%s", out)
	}

	out, err = exec(t, read, ownerCtx(true), map[string]any{"session_key": "telegram:-100", "limit": 2})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "when is dinner") || !strings.Contains(out, "Zanzibar") || !strings.Contains(out, "1 earlier messages not shown") {
		t.Errorf("read with limit 2:\n%s", out)
	}
	out, _ = exec(t, read, ownerCtx(true), map[string]any{"session_key": "telegram:-100", "query": "DINNER"})
	if !strings.Contains(out, "when is dinner") || strings.Contains(out, "Zanzibar") {
		t.Errorf("read with query:\n%s", out)
	}
	if _, err := exec(t, read, ownerCtx(true), map[string]any{"session_key": "telegram:1"}); err == nil {
		t.Error("reading the current conversation was not refused")
	}
	if _, err := exec(t, read, ownerCtx(true), map[string]any{"session_key": "nope:1"}); err == nil || !strings.Contains(err.Error(), "list_sessions") {
		t.Errorf("unknown session: %v", err)
	}

	out, err = exec(t, search, ownerCtx(true), map[string]any{"query": "friday"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "slack:C9") || strings.Contains(out, "telegram:-100") || !strings.Contains(out, "deploy the release on Friday") {
		t.Errorf("search:\n%s", out)
	}
	out, _ = exec(t, search, ownerCtx(true), map[string]any{"query": "hi"})
	if strings.Contains(out, "telegram:1 ") {
		t.Errorf("search found the current conversation:\n%s", out)
	}
}

func TestSendPassesOnAndIsRateLimited(t *testing.T) {
	var mu sync.Mutex
	var sent []bus.Inbound
	all := All(source(), func(_ context.Context, m bus.Inbound) error {
		mu.Lock()
		sent = append(sent, m)
		mu.Unlock()
		return nil
	})
	send := all[3].(*Send)
	now := t0
	send.now = func() time.Time { return now }
	args := map[string]any{"to": "telegram:-100", "content": "dinner is at 8"}
	if _, err := exec(t, send, ownerCtx(true), args); err != nil {
		t.Fatal(err)
	}
	m := sent[0]
	if m.Channel != "telegram" || m.ChatID != "-100" || m.SessionKey != "telegram:-100" || m.Source != bus.SourceSession || m.SourceRef != "telegram:1" ||
		!strings.Contains(m.Content, "dinner is at 8") || m.Admin {
		t.Errorf("passed on as %+v", m)
	}
	for range sendsPerMinute - 1 {
		if _, err := exec(t, send, ownerCtx(true), args); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := exec(t, send, ownerCtx(true), args); err == nil || !strings.Contains(err.Error(), "wait a minute") {
		t.Errorf("the 7th in a minute: %v", err)
	}
	now = now.Add(time.Minute)
	if _, err := exec(t, send, ownerCtx(true), args); err != nil {
		t.Errorf("a minute later: %v", err)
	}
	ids := map[string]bool{}
	for _, m := range sent {
		ids[m.MessageID] = true
	}
	if len(ids) != len(sent) || len(sent) != sendsPerMinute+1 {
		t.Errorf("%d sent with %d distinct ids", len(sent), len(ids))
	}
	for _, bad := range []map[string]any{{"to": "telegram:1", "content": "x"}, {"to": "nope:2", "content": "x"}} {
		if _, err := exec(t, send, ownerCtx(true), bad); err == nil {
			t.Errorf("%v was not refused", bad)
		}
	}
}
