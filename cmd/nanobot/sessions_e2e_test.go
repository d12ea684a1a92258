package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestSessionToolsThroughTelegram: the owner, in a direct chat, has the
// agent find the family group's conversation and pass a message on; the
// agent then answers in the group. A non-admin asking the same gets a
// refusal the model reads.
func TestSessionToolsThroughTelegram(t *testing.T) {
	// The two conversations' turns may interleave, so the model answers by
	// what each request holds rather than in a fixed order.
	llm := providertest.New(t)
	llm.Handle(func(r providertest.Request) providertest.Reply {
		user, after := turnOf(r)
		switch {
		case strings.Contains(user, "hi all"):
			return providertest.Reply{Text: "Hello, family!"}
		case strings.Contains(user, "passed on from the owner"):
			return providertest.Reply{Text: "Dinner is at 8 tonight, everyone!"}
		case strings.Contains(user, "tell the family") && after("s1"):
			return providertest.Reply{Text: "Passed on to the family group."}
		case strings.Contains(user, "tell the family") && after("l1"):
			return toolCall("s1", "send_session_message", `{"to":"telegram:-100","content":"Dinner is at 8 tonight."}`)
		case strings.Contains(user, "tell the family"):
			return toolCall("l1", "list_sessions", `{}`)
		case strings.Contains(user, "what do the others") && after("l2"):
			return providertest.Reply{Text: "I can't show you other conversations."}
		case strings.Contains(user, "what do the others"):
			return toolCall("l2", "list_sessions", `{}`)
		}
		return providertest.Reply{Text: "unexpected request"}
	})
	tg := telegramtest.New(t)
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range tg.Sent() {
				t.Logf("sent to %d: %q", s.ChatID, s.Visible)
			}
			for i, r := range llm.Requests() {
				raw := string(r.Raw)
				if at := strings.LastIndex(raw, `"role":"user"`); at > 0 {
					raw = raw[at:]
				}
				t.Logf("model request %d: %.700s", i, raw)
			}
		}
	})
	scriptedGateway(t, llm, fmt.Sprintf(`"telegram": {"enabled": true, "token": %q, "apiBase": %q,
	    "allowFrom": ["4242|ann", "5151|bob"], "admins": ["4242"]}`, telegramtest.Token, tg.URL), `"exec": {"enable": false}`, `"enabled": false`)

	ann := telegramtest.User{ID: 4242, Username: "ann", FirstName: "Ann"}
	bob := telegramtest.User{ID: 5151, Username: "bob", FirstName: "Bob"}
	group := telegramtest.Chat{ID: -100, Type: "group", Title: "family"}
	shown := func(chat int64, text string) func() bool {
		return func() bool {
			for _, s := range tg.Sent() {
				if s.ChatID == chat && strings.Contains(s.Visible, text) {
					return true
				}
			}
			return false
		}
	}
	tg.Send(telegramtest.Msg{From: ann, Chat: group, Text: "@" + telegramtest.BotUsername + " hi all"})
	waitfor.Within(t, "the group's first answer", 60*time.Second, shown(-100, "Hello, family!"))

	tg.Send(telegramtest.Msg{From: ann, Chat: telegramtest.Chat{ID: 4242, Type: "private"}, Text: "tell the family dinner is at 8"})
	waitfor.Within(t, "the owner told it was passed on", 60*time.Second, shown(4242, "Passed on"))
	waitfor.Within(t, "the message in the group", 60*time.Second, shown(-100, "Dinner is at 8 tonight, everyone!"))
	listed := false
	for _, r := range llm.Requests() {
		raw := string(r.Raw)
		if strings.Contains(raw, `"tool_call_id":"l1"`) && strings.Contains(raw, `telegram:-100 — \"hi all\"`) {
			listed = true
		}
	}
	if !listed {
		t.Error("list_sessions did not show the group with its title")
	}

	tg.Send(telegramtest.Msg{From: bob, Chat: telegramtest.Chat{ID: 5151, Type: "private"}, Text: "what do the others talk about?"})
	waitfor.Within(t, "bob's answer", 60*time.Second, shown(5151, "can't show you"))
	reqs := llm.Requests()
	if last := string(reqs[len(reqs)-1].Raw); !strings.Contains(last, "only the owner") || strings.Contains(last, "telegram:-100") {
		t.Errorf("a non-admin's list_sessions was not refused:\n%s", last)
	}
}
