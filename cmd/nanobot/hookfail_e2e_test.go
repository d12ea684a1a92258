package main

import (
	"encoding/json"
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

// TestHookFailuresThroughTelegram runs the gateway binary with two program
// hooks at before_tool, one on each failure policy, each of which times
// out on one tool call and crashes on another. Under "ignore" both calls
// run anyway; under "block" both are vetoed and the model is told; the
// chat gets its answer either way, and the failures are counted.
func TestHookFailuresThroughTelegram(t *testing.T) {
	llm := providertest.New(t)
	touch := func(id, marker string) providertest.ToolCall {
		return providertest.ToolCall{ID: id, Name: "exec", Arguments: fmt.Sprintf(`{"command":"touch %s"}`, marker)}
	}
	llm.Push(
		providertest.Reply{ToolCalls: []providertest.ToolCall{touch("c1", "slow-ignored"), touch("c2", "crash-ignored"), touch("c3", "slow-blocked"), touch("c4", "crash-blocked")}},
		providertest.Reply{Text: "all four tried"},
	)
	tg := telegramtest.New(t)
	dir := t.TempDir()
	cfg := scriptedConfig(t, dir, llm, fmt.Sprintf(`"telegram": {"enabled": true, "token": %q, "apiBase": %q, "allowFrom": ["4242|ann"]}`,
		telegramtest.Token, tg.URL), ``, `"enabled": false`)
	ws := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(filepath.Join(ws, "hooks"), 0o700); err != nil {
		t.Fatal(err)
	}
	// Each script sleeps past its timeout on one marker and crashes on
	// another; anything else goes through.
	script := func(slow, crash string) string {
		return fmt.Sprintf("#!/bin/sh\nreq=$(cat)\ncase \"$req\" in\n  *%s*) sleep 30 ;;\n  *%s*) exit 3 ;;\nesac\necho '{\"action\":\"continue\"}'\n", slow, crash)
	}
	for name, body := range map[string]string{"lenient.sh": script("slow-ignored", "crash-ignored"), "strict.sh": script("slow-blocked", "crash-blocked")} {
		if err := os.WriteFile(filepath.Join(ws, "hooks", name), []byte(body), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var tree map[string]any
	raw, _ := os.ReadFile(cfg)
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	// 5 s: long enough for a sandboxed shell to start on a loaded machine
	// (four start at once), so only the sleeping call times out.
	tree["hooks"] = []any{
		map[string]any{"name": "lenient", "points": []any{"before_tool"}, "command": []any{"hooks/lenient.sh"}, "timeout": "5s", "onFailure": "ignore"},
		map[string]any{"name": "strict", "points": []any{"before_tool"}, "command": []any{"hooks/strict.sh"}, "timeout": "5s", "onFailure": "block"},
	}
	raw, _ = json.Marshal(tree)
	if err := os.WriteFile(cfg, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	launchGateway(t, cfg)

	ann := telegramtest.User{ID: 4242, Username: "ann", FirstName: "Ann"}
	tg.Send(telegramtest.Msg{From: ann, Chat: telegramtest.Chat{ID: 4242, Type: "private"}, Text: "try the four"})
	waitfor.Within(t, "the answer", 60*time.Second, func() bool {
		for _, s := range tg.Sent() {
			if strings.Contains(s.Visible, "all four tried") {
				return true
			}
		}
		return false
	})
	for marker, want := range map[string]bool{"slow-ignored": true, "crash-ignored": true, "slow-blocked": false, "crash-blocked": false} {
		_, err := os.Stat(filepath.Join(ws, marker))
		if ran := err == nil; ran != want {
			t.Errorf("%s: ran %v, want %v", marker, ran, want)
		}
	}
	reqs := llm.Requests()
	last := string(reqs[len(reqs)-1].Raw)
	if n := strings.Count(last, "hook refused this call"); n != 2 {
		t.Errorf("the model was told of %d refusals, want 2:\n%.2000s", n, last[strings.LastIndex(last, `"role":"user"`):])
	}
	out, err := runIn(t, "plugins", "list", "--config", cfg)
	if err != nil || !strings.Contains(out, "lenient  program at before_tool, on failure ignore  — 4 calls, 2 failures") ||
		!strings.Contains(out, "strict  program at before_tool, on failure block  — 4 calls, 2 failures") {
		t.Errorf("plugins list: %v\n%s", err, out)
	}
}
