package message

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/internal/pathguard/pathguardtest"
)

// TestAttachmentSwapRace reproduces issue 19 for attachments: while a
// goroutine keeps exchanging the workspace folder "box" with a symlink to a
// secret folder, the message tool attaches box/note.txt and the test reads
// the attachment as a channel adapter would, after the tool returned.
func TestAttachmentSwapRace(t *testing.T) {
	const iterations = 2000
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, secret := filepath.Join(base, "ws"), filepath.Join(base, "secret")
	writeFile(t, filepath.Join(ws, "box", "note.txt"), "public note\n")
	writeFile(t, filepath.Join(secret, "note.txt"), "SECRET api key\n")
	out := &outbox{}
	tool := newRaceTool(t, out, ws, filepath.Join(base, "media"))
	ctx := tools.WithCallContext(context.Background(), tools.CallContext{Channel: "telegram", ChatID: "42"})

	sw := pathguardtest.Swap(t, filepath.Join(ws, "box"), filepath.Join(ws, "swap"), secret)
	escapes, refusals := 0, 0
	for range iterations {
		if _, err := tool.Execute(ctx, map[string]any{"content": "here", "files": []any{"box/note.txt"}}); err != nil {
			refusals++
			continue
		}
		m := out.last(t)
		if len(m.Media) != 1 {
			t.Fatalf("got %d attachments, want 1", len(m.Media))
		}
		// What the channel adapter uploads, read when it gets to it.
		data, err := os.ReadFile(m.Media[0].Path)
		if err == nil && strings.Contains(string(data), "SECRET") {
			escapes++
		}
	}
	swaps := sw.Stop(t)
	t.Logf("message: %d escapes, %d refusals in %d calls; %d folder swaps", escapes, refusals, iterations, swaps)
	if escapes != 0 {
		t.Errorf("got %d attachments with the secret, want 0", escapes)
	}
}
