package message

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/tools"
)

// outbox records what the tool publishes.
type outbox struct {
	mu   sync.Mutex
	sent []bus.Outbound
}

func (o *outbox) PublishOutbound(_ context.Context, m bus.Outbound) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sent = append(o.sent, m)
	return nil
}

func (o *outbox) last(t *testing.T) bus.Outbound {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.sent) == 0 {
		t.Fatal("nothing was sent")
	}
	return o.sent[len(o.sent)-1]
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newRaceTool(t *testing.T, out Outbox, ws, media string) *Tool {
	t.Helper()
	return New(out, Options{Workspace: ws, Restrict: true, MediaDir: media})
}

// allowList admits the ids it holds, per channel.
type allowList map[string][]string

func (a allowList) Admits(channel, id string) bool { return slices.Contains(a[channel], id) }

func TestTargets(t *testing.T) {
	here := tools.CallContext{Channel: "telegram", ChatID: "42", SessionKey: "telegram:42"}
	allowed := allowList{"telegram": {"42", "7"}, "slack": {"C1"}}
	tests := []struct {
		name     string
		opts     Options
		channel  string
		chat     string
		wantErr  bool
		wantSess string
	}{
		{name: "current chat by default", opts: Options{Targets: allowed}, wantSess: "telegram:42"},
		{name: "current chat named", opts: Options{Targets: allowed}, channel: "telegram", chat: "42", wantSess: "telegram:42"},
		{name: "current chat without a checker", opts: Options{}, channel: "telegram", chat: "42", wantSess: "telegram:42"},
		{name: "allowed chat on the same channel", opts: Options{Targets: allowed}, chat: "7"},
		{name: "allowed chat on another channel", opts: Options{Targets: allowed}, channel: "slack", chat: "C1"},
		{name: "stranger", opts: Options{Targets: allowed}, chat: "999", wantErr: true},
		{name: "id allowed on another channel only", opts: Options{Targets: allowed}, channel: "slack", chat: "7", wantErr: true},
		{name: "no checker refuses other chats", opts: Options{}, chat: "7", wantErr: true},
		{name: "allowAnyTarget", opts: Options{Targets: allowed, AllowAnyTarget: true}, chat: "999"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &outbox{}
			tt.opts.Workspace = t.TempDir()
			tool := New(out, tt.opts)
			ctx := tools.WithCallContext(context.Background(), here)
			args := map[string]any{"content": "hello"}
			if tt.channel != "" {
				args["channel"] = tt.channel
			}
			if tt.chat != "" {
				args["chat_id"] = tt.chat
			}
			res, err := tool.Execute(ctx, args)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got %q, want a refusal", res.Content)
				}
				for _, want := range []string{"not sent", tt.chat, "not the current chat", "allowAnyTarget"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not mention %q", err, want)
					}
				}
				if len(out.sent) != 0 {
					t.Errorf("got %d messages published, want none", len(out.sent))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := out.last(t)
			wantChannel, wantChat := cmpOr(tt.channel, here.Channel), cmpOr(tt.chat, here.ChatID)
			if m.Channel != wantChannel || m.ChatID != wantChat || m.SessionKey != tt.wantSess {
				t.Errorf("got %s:%s session %q, want %s:%s session %q", m.Channel, m.ChatID, m.SessionKey, wantChannel, wantChat, tt.wantSess)
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestAttachmentRestricted(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, media, outside := filepath.Join(base, "ws"), filepath.Join(base, "media"), filepath.Join(base, "outside")
	writeFile(t, filepath.Join(ws, "report.txt"), "the report\n")
	writeFile(t, filepath.Join(outside, "config.json"), "{\"apiKey\": \"SECRET\"}\n")
	if err := os.Symlink(outside, filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := &outbox{}
	tool := New(out, Options{Workspace: ws, Restrict: true, MediaDir: media})
	ctx := tools.WithCallContext(context.Background(), tools.CallContext{Channel: "telegram", ChatID: "42"})

	if _, err := tool.Execute(ctx, map[string]any{"content": "here", "files": []any{"report.txt"}}); err != nil {
		t.Fatal(err)
	}
	m := out.last(t).Media[0]
	if !strings.HasPrefix(m.Path, filepath.Join(media, "outbound")+string(filepath.Separator)) {
		t.Errorf("got path %s, want a copy under %s", m.Path, filepath.Join(media, "outbound"))
	}
	if m.Name != "report.txt" || m.Size != int64(len("the report\n")) || !strings.HasPrefix(m.MIMEType, "text/plain") {
		t.Errorf("got name %q size %d type %q, want report.txt, %d, text/plain", m.Name, m.Size, m.MIMEType, len("the report\n"))
	}
	if fi, err := os.Stat(m.Path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("copy: %v, %v; want mode 0600", fi, err)
	}
	// Changing the workspace file afterwards does not change what is sent.
	writeFile(t, filepath.Join(ws, "report.txt"), "changed\n")
	if got, _ := os.ReadFile(m.Path); string(got) != "the report\n" {
		t.Errorf("copy holds %q, want the checked content", got)
	}

	for _, tc := range []struct{ path, want string }{
		{"out/config.json", "outside the workspace"},
		{"../outside/config.json", "outside the workspace"},
		{filepath.Join(outside, "config.json"), "outside the workspace"},
		{"missing.txt", "does not exist"},
		{"dir", "not a file"},
	} {
		_, err := tool.Execute(ctx, map[string]any{"content": "x", "files": []any{tc.path}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("attach %s: got %v, want an error containing %q", tc.path, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("attach %s: secret in the error", tc.path)
		}
	}
	if n := len(out.sent); n != 1 {
		t.Errorf("got %d messages, want only the first", n)
	}
}

func TestAttachmentUnrestricted(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	writeFile(t, filepath.Join(outside, "notes.md"), "notes\n")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	out := &outbox{}
	tool := New(out, Options{Workspace: ws})
	ctx := tools.WithCallContext(context.Background(), tools.CallContext{Channel: "telegram", ChatID: "42"})
	if _, err := tool.Execute(ctx, map[string]any{"content": "here", "files": []any{"../outside/notes.md"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := out.last(t).Media[0].Path, filepath.Join(outside, "notes.md"); got != want {
		t.Errorf("got path %s, want the file itself, %s", got, want)
	}
}
