package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// TestMyChecksSetsAndUndoes: `my` shows the chat's settings, changes the
// model preset and queue mode for an admin only (telling the chat), and
// undo puts the last change back.
func TestMyChecksSetsAndUndoes(t *testing.T) {
	out := &outbox{}
	presets := Presets{Names: []string{"fast", "smart"}, Resolve: func(n string) (Model, error) {
		return Model{Provider: &fakeLLM{}, Model: n + "-model"}, nil
	}}
	_, deps := assemble(t, func(_ *configs.Config, d *Deps) { d.Model, d.Out, d.Presets = "base-model", out, presets })
	reg, store := deps.Tools, deps.Store
	admin := tools.CallContext{Channel: "telegram", ChatID: "1", SessionKey: "telegram:1", SenderID: "1|ann", Admin: true}
	my := func(cc tools.CallContext, args map[string]any) (string, error) {
		res, err := reg.Execute(tools.WithCallContext(context.Background(), cc), "my", args)
		return res.Content, err
	}
	got, err := my(admin, map[string]any{"action": "check"})
	if err != nil || !strings.Contains(got, "model: base-model") || !strings.Contains(got, "presets available: fast, smart") || !strings.Contains(got, "Not changeable") {
		t.Errorf("check: %q %v", got, err)
	}
	guest := admin
	guest.Admin = false
	if _, err := my(guest, map[string]any{"action": "set", "key": "model_preset", "value": "fast"}); err == nil {
		t.Error("a non-admin changed the model")
	}
	if _, err := my(admin, map[string]any{"action": "set", "key": "model_preset", "value": "huge"}); err == nil || !strings.Contains(err.Error(), "unknown preset") {
		t.Errorf("unknown preset: %v", err)
	}
	if _, err := my(admin, map[string]any{"action": "set", "key": "sandbox", "value": "none"}); err == nil {
		t.Error("a key outside the allow-list was taken")
	}
	if got, err := my(admin, map[string]any{"action": "set", "key": "model_preset", "value": "fast"}); err != nil || !strings.Contains(got, "default → fast") {
		t.Fatalf("set preset: %q %v", got, err)
	}
	if got, err := my(admin, map[string]any{"action": "set", "key": "queue_mode", "value": "steer"}); err != nil || !strings.Contains(got, "default → steer") {
		t.Fatalf("set queue: %q %v", got, err)
	}
	sess, _ := store.Load(context.Background(), "telegram:1")
	if sess.Meta(MetaModelPreset) != "fast" || sess.Meta(MetaQueueMode) != "steer" {
		t.Errorf("stored: %v %v", sess.Meta(MetaModelPreset), sess.Meta(MetaQueueMode))
	}
	if got, err := my(admin, map[string]any{"action": "undo"}); err != nil || !strings.Contains(got, "queue_mode: steer → default") {
		t.Fatalf("undo: %q %v", got, err)
	}
	if _, err := my(admin, map[string]any{"action": "undo"}); err == nil {
		t.Error("a second undo flipped the change back")
	}
	sess, _ = store.Load(context.Background(), "telegram:1")
	if sess.Meta(MetaModelPreset) != "fast" || sess.Meta(MetaQueueMode) != nil {
		t.Errorf("after undo: %v %v", sess.Meta(MetaModelPreset), sess.Meta(MetaQueueMode))
	}
	notes := 0
	for _, m := range out.all() {
		if m.ChatID == "1" && strings.Contains(m.Content, "⚙️ Setting") {
			notes++
		}
	}
	if notes != 3 {
		t.Errorf("%d change notices in the chat, want 3", notes)
	}
}

// TestSearchSessionsReadsTheStore: search_sessions, as New wires it, finds
// a conversation through the store's files (not its cache), shows its
// title, and leaves out the current conversation and one set aside by /new.
func TestSearchSessionsReadsTheStore(t *testing.T) {
	_, deps := assemble(t, nil)
	ctx := context.Background()
	say := func(key string, texts ...string) *session.Session {
		t.Helper()
		s, err := deps.Store.Load(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		for i, tx := range texts {
			role := providers.RoleUser
			if i%2 == 1 {
				role = providers.RoleAssistant
			}
			if err := deps.Store.Append(ctx, s, providers.Message{Role: role, Content: tx}); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	say("telegram:1", "the lighthouse keeper's number?")
	say("telegram:2", "plans for the lighthouse trip", "Saturday at 9.")
	old := say("telegram:3", "an old lighthouse chat")
	if err := deps.Store.Archive(ctx, old); err != nil {
		t.Fatal(err)
	}
	admin := tools.CallContext{Channel: "telegram", ChatID: "1", SessionKey: "telegram:1", Admin: true}
	res, err := deps.Tools.Execute(tools.WithCallContext(ctx, admin), "search_sessions", map[string]any{"query": "LIGHTHOUSE"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Content, `telegram:2 — "plans for the lighthouse trip"`) || strings.Contains(res.Content, "telegram:1 ") || strings.Contains(res.Content, "telegram:3") {
		t.Errorf("search:\n%s", res.Content)
	}
}
