//go:build !windows

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestRestartFromChat: a non-admin's /restart is refused; an admin's stops
// the gateway gracefully and the same process (same pid, as a service
// manager sees it) starts again, says so in the chat, and answers; the
// /restart is not run a second time after the restart.
func TestRestartFromChat(t *testing.T) {
	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply { return providertest.Reply{Text: "still here"} })
	tg := telegramtest.New(t)
	dir := t.TempDir()
	cfg := scriptedConfig(t, dir, llm, fmt.Sprintf(`"telegram": {"enabled": true, "token": %q, "apiBase": %q,
	    "allowFrom": ["4242|ann", "5151|bob"], "admins": ["4242"]}`, telegramtest.Token, tg.URL), ``, `"enabled": false`)
	gw := launchGateway(t, cfg)
	count := func(chat int64, text string) int {
		n := 0
		for _, s := range tg.Sent() {
			if s.ChatID == chat && strings.Contains(s.Visible, text) {
				n++
			}
		}
		return n
	}
	ann := telegramtest.User{ID: 4242, Username: "ann", FirstName: "Ann"}
	bob := telegramtest.User{ID: 5151, Username: "bob", FirstName: "Bob"}
	tg.Send(telegramtest.Msg{From: bob, Chat: telegramtest.Chat{ID: 5151, Type: "private"}, Text: "/restart"})
	waitfor.Within(t, "bob refused", 30*time.Second, func() bool { return count(5151, "Only an admin can restart") == 1 })

	tg.Send(telegramtest.Msg{From: ann, Chat: telegramtest.Chat{ID: 4242, Type: "private"}, Text: "/restart"})
	waitfor.Within(t, "the restart announced", 30*time.Second, func() bool { return count(4242, "Restarting") == 1 })
	waitfor.Within(t, "back after the restart", 60*time.Second, func() bool { return count(4242, "Restarted") == 1 })
	select {
	case err := <-gw.exited:
		t.Fatalf("the process ended instead of restarting in place: %v", err)
	default:
	}
	tg.Send(telegramtest.Msg{From: ann, Chat: telegramtest.Chat{ID: 4242, Type: "private"}, Text: "are you there?"})
	waitfor.Within(t, "an answer after the restart", 30*time.Second, func() bool { return count(4242, "still here") == 1 })
	if n := count(4242, "Restarting"); n != 1 {
		t.Errorf("/restart ran %d times", n)
	}
	if n := strings.Count(gw.logs.String(), "gateway ready"); n != 2 {
		t.Errorf("the gateway became ready %d times, want 2", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", restartFile)); err == nil {
		t.Error("the restart record was left behind")
	}
}
