package shell

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/approval"
)

// A command nobody may approve is a refusal (tools.RefusedError): the
// model is told not to try another way, and no hint to "try a different
// approach" follows it.
func TestApprovalRefusalIsARefusal(t *testing.T) {
	ap := Approval{Mode: approval.Always}
	err := ap.check(context.Background(), slog.New(slog.DiscardHandler), "exec", "ls", nil)
	var refused *tools.RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("check: %v, want a RefusedError", err)
	}
}
