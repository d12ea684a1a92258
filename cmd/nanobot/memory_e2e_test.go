//go:build !windows

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestCompactDreamRestoreAcrossARestart: through the gateway binary,
// /compact folds the conversation into MEMORY.md and the next turn is
// sent the memory and only the last exchanges; /dream rewrites the memory
// and keeps the old one as a version; /dream-restore brings it back; after
// a restart the restored memory and the compacted conversation are what
// the model is sent.
func TestCompactDreamRestoreAcrossARestart(t *testing.T) {
	const (
		folded  = "## Boats\n\nAnn's boat is called Aurora, moored in Brest.\n"
		dreamed = "## Boats\n\nAnn's boat: Aurora.\n"
	)
	llm := providertest.New(t)
	llm.Handle(func(r providertest.Request) providertest.Reply {
		raw := string(r.Raw)
		switch {
		case strings.Contains(raw, `"save_memory"`) && strings.Contains(raw, "## Instructions"):
			return toolCall("d1", "save_memory", jsonArgs(t, map[string]any{"history_entry": "[2026-12-05 10:00] Dreamed.", "memory_update": dreamed}))
		case strings.Contains(raw, `"save_memory"`):
			return toolCall("s1", "save_memory", jsonArgs(t, map[string]any{"history_entry": "[2026-12-05 10:00] Ann talked about her boat Aurora in Brest.", "memory_update": folded}))
		}
		return providertest.Reply{Text: "ok"}
	})
	tg := telegramtest.New(t)
	dir := t.TempDir()
	cfg := scriptedConfig(t, dir, llm, fmt.Sprintf(`"telegram": {"enabled": true, "token": %q, "apiBase": %q,
	    "allowFrom": ["4242|ann"], "admins": ["4242"]}`, telegramtest.Token, tg.URL), ``, `"enabled": false`)
	ann := telegramtest.User{ID: 4242, Username: "ann", FirstName: "Ann"}
	ask := func(text, want string) string {
		t.Helper()
		n := len(tg.Sent())
		tg.Send(telegramtest.Msg{From: ann, Chat: telegramtest.Chat{ID: 4242, Type: "private"}, Text: text})
		var got string
		waitfor.Within(t, "the answer to "+text, 30*time.Second, func() bool {
			for _, s := range tg.Sent()[n:] {
				if strings.Contains(s.Visible, want) {
					got = s.Visible
					return true
				}
			}
			return false
		})
		return got
	}
	lastChat := func() string {
		reqs := llm.Requests()
		for i := len(reqs) - 1; i >= 0; i-- {
			if raw := string(reqs[i].Raw); !strings.Contains(raw, `"save_memory"`) && reqs[i].Format == providertest.OpenAI {
				return raw
			}
		}
		return ""
	}
	memFile := filepath.Join(dir, "workspace", "memory", "MEMORY.md")

	gw := launchGateway(t, cfg)
	ask("my boat is called Aurora", "ok")
	ask("it is moored in Brest", "ok")
	ask("and it needs new sails", "ok")
	ask("thanks for listening", "ok")
	ask("/compact", "Compacted:")
	ask("what do you know about my boat?", "ok")
	sent := lastChat()
	if !strings.Contains(sent, "Ann's boat is called Aurora, moored in Brest.") {
		t.Errorf("the turn after /compact was not sent the memory:\n%s", sent)
	}
	if strings.Contains(sent, "my boat is called Aurora") {
		t.Errorf("the turn after /compact was still sent the folded messages:\n%s", sent)
	}

	ask("/dream", "Memory tidied.")
	if got := readText(t, memFile); got != dreamed {
		t.Errorf("MEMORY.md after /dream:\n%q", got)
	}
	log := ask("/dream-log", "Earlier versions")
	ids := regexp.MustCompile(`(?m)^(\S+) — replaced`).FindAllStringSubmatch(log, -1)
	if len(ids) < 2 {
		t.Fatalf("/dream-log lists %d versions, want the empty memory and the folded one:\n%s", len(ids), log)
	}
	ask("/dream-restore "+ids[0][1], "restored to version "+ids[0][1])
	if got := readText(t, memFile); got != folded {
		t.Errorf("MEMORY.md after /dream-restore:\n%q, want the folded memory back", got)
	}

	gw.stop()
	launchGateway(t, cfg)
	ask("and after a restart?", "ok")
	sent = lastChat()
	if !strings.Contains(sent, "Ann's boat is called Aurora, moored in Brest.") || strings.Contains(sent, "my boat is called Aurora") {
		t.Errorf("after a restart the model was sent:\n%s", sent)
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// jsonArgs encodes tool call arguments.
func jsonArgs(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
