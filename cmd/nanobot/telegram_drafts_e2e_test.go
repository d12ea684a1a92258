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

// TestTelegramDraftsEndToEnd runs the gateway binary with Telegram on its
// defaults: an answer the model streams slowly reaches a private chat as
// message drafts under one draft id, growing, and then as exactly one
// message with the whole answer; nothing is edited.
func TestTelegramDraftsEndToEnd(t *testing.T) {
	const answer = "Drafts first: the answer grows in the chat while the model writes it, and then it is sent once."
	llm := providertest.New(t)
	llm.Handle(func(r providertest.Request) providertest.Reply {
		if user, _ := turnOf(r); strings.Contains(user, "tell me") {
			return providertest.Reply{Text: answer, Chunks: 12, EventDelay: 300 * time.Millisecond}
		}
		return providertest.Reply{Text: "unexpected request"}
	})
	tg := telegramtest.New(t)
	scriptedGateway(t, llm, fmt.Sprintf(`"telegram": {"enabled": true, "token": %q, "apiBase": %q, "allowFrom": ["4242"]},
	    "sendProgress": false, "sendToolHints": false`, telegramtest.Token, tg.URL), `"exec": {"enable": false}`, `"enabled": false`)
	ann := telegramtest.User{ID: 4242, Username: "ann", FirstName: "Ann"}
	chat := telegramtest.Chat{ID: ann.ID, Type: "private"}
	waitfor.Within(t, "the gateway polling Telegram", 60*time.Second, tg.Polling)

	tg.Send(telegramtest.Msg{From: ann, Chat: chat, Text: "tell me about drafts"})
	waitfor.Within(t, "the answer sent", 60*time.Second, func() bool {
		for _, s := range tg.Sent() {
			if s.ChatID == ann.ID && s.Visible == answer {
				return true
			}
		}
		return false
	})
	// A command answered after it: by then a second copy of the answer
	// would have been sent too.
	tg.Send(telegramtest.Msg{From: ann, Chat: chat, Text: "/help"})
	waitfor.Within(t, "the /help answer", 60*time.Second, func() bool {
		sent := tg.Sent()
		return len(sent) > 0 && strings.Contains(sent[len(sent)-1].Visible, "/new")
	})

	sent := tg.Sent()
	if len(sent) != 2 || sent[0].Visible != answer || sent[0].Method != "sendMessage" {
		t.Errorf("sent %+v, want the answer once, then the help", sent)
	}
	for _, s := range sent {
		if s.Edit {
			t.Errorf("an edit in a private chat that streams as drafts: %+v", s)
		}
	}
	drafts := tg.Drafts(ann.ID)
	if len(drafts) < 2 {
		t.Fatalf("%d drafts for an answer streamed over about 3 s, want it shown growing", len(drafts))
	}
	for i, d := range drafts {
		if d.DraftID != drafts[0].DraftID {
			t.Errorf("draft %d has id %d, want one id %d for the answer", i, d.DraftID, drafts[0].DraftID)
		}
		if i > 0 && !strings.HasPrefix(d.Visible, drafts[i-1].Visible) {
			t.Errorf("draft %d %q does not continue %q", i, d.Visible, drafts[i-1].Visible)
		}
		if d.Visible == "" || !strings.HasPrefix(answer, d.Visible) {
			t.Errorf("draft %d %q is not a start of the answer", i, d.Visible)
		}
		if d.At.After(sent[0].At) {
			t.Errorf("draft %d came after the answer was sent", i)
		}
	}
}

// TestTelegramMenusAndRichTableEndToEnd runs the gateway binary with
// Telegram and richMessages on: the command menus are registered per
// audience (everyone's without the owner's commands, the owner's chat
// with them), and an answer holding a Markdown table, streamed as drafts,
// arrives once as a rich message carrying the table.
func TestTelegramMenusAndRichTableEndToEnd(t *testing.T) {
	const table = "Prices:\n\n| plan | per month |\n|---|---:|\n| small | 5 |\n| large | 20 |\n\nThat is all."
	llm := providertest.New(t)
	llm.Handle(func(r providertest.Request) providertest.Reply {
		if user, _ := turnOf(r); strings.Contains(user, "prices") {
			return providertest.Reply{Text: table, Chunks: 4, EventDelay: 100 * time.Millisecond}
		}
		return providertest.Reply{Text: "unexpected request"}
	})
	tg := telegramtest.New(t)
	scriptedGateway(t, llm, fmt.Sprintf(`"telegram": {"enabled": true, "token": %q, "apiBase": %q, "allowFrom": ["4242"], "richMessages": true},
	    "sendProgress": false, "sendToolHints": false`, telegramtest.Token, tg.URL), `"exec": {"enable": false}`, `"enabled": false`)
	waitfor.Within(t, "the gateway polling Telegram", 60*time.Second, tg.Polling)
	waitfor.Within(t, "the owner's menu", 30*time.Second, func() bool { return len(tg.Commands("chat:4242")) > 0 })
	everyone, owner := strings.Join(tg.Commands("all_private_chats"), " "), strings.Join(tg.Commands("chat:4242"), " ")
	for _, c := range []string{"new", "help"} {
		if !strings.Contains(" "+everyone+" ", " "+c+" ") || !strings.Contains(" "+owner+" ", " "+c+" ") {
			t.Errorf("/%s missing from a menu: everyone %q, owner %q", c, everyone, owner)
		}
	}
	if strings.Contains(" "+everyone+" ", " restart ") || !strings.Contains(" "+owner+" ", " restart ") {
		t.Errorf("/restart: everyone's menu %q, the owner's %q; want it in the owner's only", everyone, owner)
	}

	ann := telegramtest.User{ID: 4242, Username: "ann", FirstName: "Ann"}
	tg.Send(telegramtest.Msg{From: ann, Chat: telegramtest.Chat{ID: ann.ID, Type: "private"}, Text: "what are the prices?"})
	waitfor.Within(t, "the answer sent", 60*time.Second, func() bool { return len(tg.Sent()) > 0 })
	if sent := tg.Sent(); len(sent) != 1 || !sent[0].Rich || sent[0].Text != table {
		t.Errorf("sent %+v, want the table once as a rich message", sent)
	}
}
