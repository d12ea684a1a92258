package browser

import (
	"context"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/approval"
)

func TestApprovalAsksBeforeActing(t *testing.T) {
	for _, tc := range []struct {
		mode   approval.Mode
		action string
		args   map[string]any
		ask    bool
	}{
		{approval.Risky, "type", map[string]any{"ref": "e1", "text": "x", "submit": true}, true},
		{approval.Risky, "type", map[string]any{"ref": "e1", "text": "x"}, false},
		{approval.Risky, "navigate", map[string]any{"url": "https://example.com"}, false},
		{approval.Always, "navigate", map[string]any{"url": "https://example.com"}, true},
		{approval.Always, "click", map[string]any{"ref": "e2"}, true},
		{approval.Always, "snapshot", nil, false},
		{approval.Always, "screenshot", nil, false},
		{approval.Off, "type", map[string]any{"submit": true}, false},
	} {
		if got, _ := asks(tc.mode, tc.action, tools.Args(tc.args)); got != tc.ask {
			t.Errorf("%s %s %v: asks %v", tc.mode, tc.action, tc.args, got)
		}
	}

	b, err := New(Options{ExecPath: "chromium", ProfileDir: t.TempDir(), OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	broker, err := approval.New(approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan bus.Outbound, 1)
	broker.SetNotifier(func(_ context.Context, m bus.Outbound) error { asked <- m; return nil })
	tool := b.Tool("ws").WithApproval(Approval{Mode: approval.Always, Broker: broker})
	ctx := tools.WithCallContext(context.Background(), tools.CallContext{Channel: "telegram", ChatID: "1", SessionKey: "telegram:1"})
	done := make(chan error, 1)
	go func() {
		_, err := tool.Execute(ctx, map[string]any{"action": "navigate", "url": "https://shop.example/checkout"})
		done <- err
	}()
	m := <-asked
	if !strings.Contains(m.Content, "browser: open https://shop.example/checkout") {
		t.Errorf("request: %s", m.Content)
	}
	broker.AnswerCommand(m.Actions[2].Command, "telegram:1")
	if err := <-done; err == nil || !strings.Contains(err.Error(), "said no") {
		t.Errorf("denied navigate: %v", err)
	}
	if _, ok := b.Running(); ok {
		t.Error("Chromium was started for a denied action")
	}
	nobody := b.Tool("ws").WithApproval(Approval{Mode: approval.Risky})
	if _, err := nobody.Execute(ctx, map[string]any{"action": "type", "ref": "e1", "text": "x", "submit": true}); err == nil || !strings.Contains(err.Error(), "nobody to ask") {
		t.Errorf("no broker: %v", err)
	}
}
