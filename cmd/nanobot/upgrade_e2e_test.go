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
	"github.com/nanobot-go/nanobot/internal/stateformat"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestDataFolderUpgradeAndRefusal: a data folder in the previous format
// (everything as this build writes it, without state/format.json, as
// builds before the record left it) is upgraded on start and read back
// whole — the conversation goes on with its history, the paired sender is
// still let in; a folder recorded by a newer build is refused with a
// message that says what to do, and nothing in it is touched.
func TestDataFolderUpgradeAndRefusal(t *testing.T) {
	llm := providertest.New(t)
	llm.Handle(func(r providertest.Request) providertest.Reply {
		if strings.Contains(string(r.Raw), "the second message") {
			return providertest.Reply{Text: "second answer"}
		}
		return providertest.Reply{Text: "first answer"}
	})
	tg := telegramtest.New(t)
	dir := t.TempDir()
	cfg := scriptedConfig(t, dir, llm, fmt.Sprintf(`"telegram": {"enabled": true, "token": %q, "apiBase": %q, "allowFrom": []}`,
		telegramtest.Token, tg.URL), ``, `"enabled": false`)
	bin := binary(t)
	ann := telegramtest.User{ID: 4242, Username: "ann", FirstName: "Ann"}
	chat := telegramtest.Chat{ID: 4242, Type: "private"}
	shown := func(text string) func() bool {
		return func() bool {
			for _, s := range tg.Sent() {
				if strings.Contains(s.Visible, text) {
					return true
				}
			}
			return false
		}
	}

	// A first life: a stranger pairs, the owner approves, a conversation.
	gw := launchGateway(t, cfg)
	tg.Send(telegramtest.Msg{From: ann, Chat: chat, Text: "hello"})
	waitfor.Within(t, "the pairing code", 30*time.Second, shown("pairing code"))
	code := ""
	for _, s := range tg.Sent() {
		if i := strings.Index(s.Visible, "pairing approve "); i >= 0 {
			code = strings.Fields(s.Visible[i+len("pairing approve "):])[0]
			code = strings.Trim(code, "`).")
		}
	}
	if out, err := exec.Command(bin, "pairing", "approve", code, "--config", cfg).CombinedOutput(); err != nil {
		t.Fatalf("pairing approve %q: %v\n%s", code, err, out)
	}
	tg.Send(telegramtest.Msg{From: ann, Chat: chat, Text: "the first message"})
	waitfor.Within(t, "the first answer", 30*time.Second, shown("first answer"))
	gw.stop()

	// Make it a folder of the previous format: no record.
	record := filepath.Join(dir, "state", stateformat.FileName)
	if err := os.Remove(record); err != nil {
		t.Fatalf("the first life wrote no format record: %v", err)
	}
	gw = launchGateway(t, cfg)
	tg.Send(telegramtest.Msg{From: ann, Chat: chat, Text: "the second message"})
	waitfor.Within(t, "the second answer", 30*time.Second, shown("second answer"))
	reqs := llm.Requests()
	last := string(reqs[len(reqs)-1].Raw)
	if !strings.Contains(last, "the first message") || !strings.Contains(last, "first answer") {
		t.Errorf("the upgraded folder lost the conversation; the model saw:\n%.3000s", last[strings.Index(last, `"messages"`):])
	}
	if b, err := os.ReadFile(record); err != nil || !strings.Contains(string(b), fmt.Sprintf(`"version": %d`, stateformat.Current)) {
		t.Errorf("after the upgrade format.json is %q (%v)", b, err)
	}
	gw.stop()

	// A folder from a newer build is refused, untouched.
	newer := []byte(`{"version": 99, "by": "nanobot v9.9.9"}`)
	if err := os.WriteFile(record, newer, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "gateway", "--config", cfg)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "format 99") || !strings.Contains(string(out), "Upgrade nanobot") {
		t.Errorf("a newer folder was not refused: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(record); string(b) != string(newer) {
		t.Errorf("the newer record was changed: %s", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "gateway.pid")); err == nil {
		t.Error("the refused start left a pidfile")
	}
}
