package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestGoalAdvancedByTheHeartbeat: the owner sets a goal with /goal; the
// model records it; the heartbeat (every 10 s, its shortest) wakes the
// agent in that chat to continue, the progress reaches the chat, and a
// check-in with nothing new stays silent; `nanobot status` lists the goal
// until it is complete.
func TestGoalAdvancedByTheHeartbeat(t *testing.T) {
	checkIns := 0
	llm := providertest.New(t)
	llm.Handle(func(r providertest.Request) providertest.Reply {
		raw := string(r.Raw)
		if strings.Contains(raw, `"tool_choice"`) && strings.Contains(raw, "HEARTBEAT.md") {
			return toolCall("hb", "heartbeat", `{"action":"skip"}`) // HEARTBEAT.md's own tasks: none due
		}
		user, after := turnOf(r)
		switch {
		case strings.Contains(user, "set a sustained goal with /goal") && after("c1"):
			return providertest.Reply{Text: "Goal set: I will watch the price."}
		case strings.Contains(user, "set a sustained goal with /goal"):
			return toolCall("c1", "create_goal", `{"objective":"Watch the Lisbon flight price; done when it is under 300 EUR","ui_summary":"Lisbon flight under 300"}`)
		case strings.Contains(user, "Goal check-in") && after("p1"):
			return providertest.Reply{Text: "Update: the price is now 320 EUR."}
		case strings.Contains(user, "Goal check-in") && after("p2"):
			return providertest.Reply{Text: "It dropped to 290 EUR, goal reached!"}
		case strings.Contains(user, "Goal check-in"):
			checkIns++
			switch checkIns {
			case 1:
				return toolCall("p1", "update_goal", `{"action":"progress","recap":"checked: 320 EUR"}`)
			case 2:
				return providertest.Reply{Text: "HEARTBEAT_OK"} // nothing new: not delivered
			default:
				return toolCall("p2", "update_goal", `{"action":"complete","recap":"290 EUR"}`)
			}
		}
		return providertest.Reply{Text: "unexpected request"}
	})
	tg := telegramtest.New(t)
	cfg, _ := scriptedGateway(t, llm, fmt.Sprintf(`"telegram": {"enabled": true, "token": %q, "apiBase": %q, "allowFrom": ["4242|ann"]}`,
		telegramtest.Token, tg.URL), `"exec": {"enable": false}`, `"enabled": true, "intervalS": 10`)
	ann := telegramtest.User{ID: 4242, Username: "ann", FirstName: "Ann"}
	shown := func(text string) func() bool {
		return func() bool {
			for _, s := range tg.Sent() {
				if s.ChatID == 4242 && strings.Contains(s.Visible, text) {
					return true
				}
			}
			return false
		}
	}
	tg.Send(telegramtest.Msg{From: ann, Chat: telegramtest.Chat{ID: 4242, Type: "private"}, Text: "/goal watch the Lisbon flight price until it is under 300"})
	waitfor.Within(t, "the goal confirmed", 60*time.Second, shown("Goal set"))
	status := func() string {
		out, err := exec.Command(binary(t), "status", "--config", cfg).CombinedOutput()
		if err != nil {
			t.Fatalf("status: %v\n%s", err, out)
		}
		return string(out)
	}
	if st := status(); !strings.Contains(st, "1 active") || !strings.Contains(st, "Lisbon flight under 300") {
		t.Errorf("status does not list the goal:\n%s", st)
	}
	waitfor.Within(t, "the first check-in's progress in the chat", 60*time.Second, shown("the price is now 320"))
	waitfor.Within(t, "the goal completed by a later check-in", 60*time.Second, shown("goal reached"))
	for _, s := range tg.Sent() {
		if strings.Contains(s.Visible, "HEARTBEAT_OK") {
			t.Errorf("a silent check-in was delivered: %q", s.Visible)
		}
	}
	if st := status(); !strings.Contains(st, "none active") {
		t.Errorf("status still lists the completed goal:\n%s", st)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(cfg), "state", "goals.json")); err != nil {
		t.Error(err)
	}
}
