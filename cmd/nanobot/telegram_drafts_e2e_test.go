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
	waitfor.Within(t, "the gateway polling Telegram", 60*time.Second, func() bool { return tg.Polls() > 0 })

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
