//go:build !windows

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

// TestMemorySearchAcrossARestart: through the gateway binary, with an
// embedding model configured, what the owner said in one conversation is
// found by memory_search from the next one (after /new), by words and by
// meaning, and the answer names where it comes from; after a restart the
// index is read from the workspace, not built again: only the new
// messages and the query are embedded.
func TestMemorySearchAcrossARestart(t *testing.T) {
	llm := providertest.New(t)
	llm.Handle(func(r providertest.Request) providertest.Reply {
		user, after := turnOf(r)
		switch {
		case strings.Contains(user, "where did I leave"):
			if after("m1") {
				return providertest.Reply{Text: "From memory: " + lastToolResult(t, r)}
			}
			return toolCall("m1", "memory_search", `{"query":"spare keys flowerpot","limit":1}`)
		default:
			return providertest.Reply{Text: "Noted."}
		}
	})
	tg := telegramtest.New(t)
	dir := t.TempDir()
	cfg := scriptedConfig(t, dir, llm, fmt.Sprintf(`"telegram": {"enabled": true, "token": %q, "apiBase": %q,
	    "allowFrom": ["4242|ann"], "admins": ["4242"]}`, telegramtest.Token, tg.URL), ``, `"enabled": false`)
	editJSON(t, cfg, func(c map[string]any) {
		d := c["agents"].(map[string]any)["defaults"].(map[string]any)
		d["memory"] = map[string]any{"embeddingModel": "text-embedding-3-small", "embeddingProvider": "vllm"}
	})
	ann := telegramtest.User{ID: 4242, Username: "ann", FirstName: "Ann"}
	say := func(text string) {
		tg.Send(telegramtest.Msg{From: ann, Chat: telegramtest.Chat{ID: 4242, Type: "private"}, Text: text})
	}
	replies := func(text string) int {
		n := 0
		for _, s := range tg.Sent() {
			if strings.Contains(s.Visible, text) {
				n++
			}
		}
		return n
	}
	embedded := func() (texts int) {
		for _, r := range llm.Requests() {
			if r.Format == providertest.Embeddings {
				in, _ := r.Body["input"].([]any)
				texts += len(in)
			}
		}
		return texts
	}

	gw := launchGateway(t, cfg)
	say("I left the spare key under the blue flowerpot by the door")
	waitfor.Within(t, "the fact noted", 30*time.Second, func() bool { return replies("Noted.") == 1 })
	say("/new")
	waitfor.Within(t, "a new conversation", 30*time.Second, func() bool { return replies("New conversation started.") == 1 })
	say("where did I leave the key?")
	waitfor.Within(t, "the answer from memory", 30*time.Second, func() bool { return replies("From memory:") == 1 })
	answer := lastSent(tg, "From memory:")
	if !strings.Contains(answer, "blue flowerpot") || !strings.Contains(answer, "conversation telegram:4242 (archived), the user") {
		t.Errorf("the answer does not hold the fact and its source:\n%s", answer)
	}
	before := embedded()
	if before < 2 {
		t.Errorf("%d texts embedded before the restart, want the stored messages and the query", before)
	}
	index := filepath.Join(dir, "workspace", "memory", ".index", "index.gob")
	gw.stop()
	if fi, err := os.Stat(index); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the index was not saved in the workspace: %v %v", fi, err)
	}

	gw = launchGateway(t, cfg)
	say("where did I leave the key? asking again")
	waitfor.Within(t, "the answer after the restart", 60*time.Second, func() bool { return replies("From memory:") == 2 })
	if answer := lastSent(tg, "From memory:"); !strings.Contains(answer, "blue flowerpot") {
		t.Errorf("after the restart:\n%s", answer)
	}
	// Since the restart: the question just asked (a new message of the
	// conversation) and the query; the rest came from the saved index.
	t.Logf("texts embedded: %d before the restart, %d after", before, embedded()-before)
	if n := embedded() - before; n > 3 {
		t.Errorf("%d texts embedded after the restart: the index was built again", n)
	}
	if strings.Contains(gw.logs.String(), "rebuilding it from the files") {
		t.Errorf("the saved index was rebuilt:\n%s", gw.logs.String())
	}
}

// editJSON rewrites a JSON config file through f.
func editJSON(t *testing.T, path string, f func(map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	f(c)
	if data, err = json.Marshal(c); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// lastToolResult is the content of the last tool message of a request.
func lastToolResult(t *testing.T, r providertest.Request) string {
	msgs, _ := r.Body["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		if m, _ := msgs[i].(map[string]any); m["role"] == "tool" {
			s, _ := m["content"].(string)
			return s
		}
	}
	t.Errorf("no tool result in the request")
	return ""
}

// lastSent is the last message sent that contains text.
func lastSent(tg *telegramtest.Server, text string) string {
	out := ""
	for _, s := range tg.Sent() {
		if strings.Contains(s.Visible, text) {
			out = s.Visible
		}
	}
	return out
}
