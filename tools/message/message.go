// Package message is the `message` tool: the agent sends text, and files as
// attachments, to the current chat or to a named channel and chat while it
// keeps working. It is the only tool that can attach files.
package message

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"strings"

	"github.com/nanobot-go/nanobot/gateway/bus"
	"github.com/nanobot-go/nanobot/tools"
)

// Outbox is where messages go (the bus).
type Outbox interface {
	PublishOutbound(ctx context.Context, m bus.Outbound) error
}

// Tool is the message tool.
type Tool struct {
	out       Outbox
	workspace string
	// restrict keeps attachments inside the workspace.
	restrict bool
}

var _ tools.Tool = (*Tool)(nil)

// New returns the tool. Attachments must be inside workspace when restrict
// is set.
func New(out Outbox, workspace string, restrict bool) *Tool {
	return &Tool{out: out, workspace: workspace, restrict: restrict}
}

func (t *Tool) Name() string { return "message" }

func (t *Tool) Description() string {
	return "Send a message to the user now, optionally with files attached (the only way to send files). " +
		"By default it goes to the current chat; set channel and chat_id to reach another chat. " +
		"Use it for progress updates on long tasks or to deliver files; your final reply is sent anyway, so do not repeat it here."
}

func (t *Tool) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"content": map[string]any{"type": "string", "description": "the message text (Markdown)"},
			"files":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "paths of files to attach"},
			"channel": map[string]any{"type": "string", "description": "target channel (default: the current one)"},
			"chat_id": map[string]any{"type": "string", "description": "target chat (default: the current one)"},
		},
		"required": []any{"content"},
	}
}

func (t *Tool) Execute(ctx context.Context, args map[string]any) (tools.Result, error) {
	cc, _ := tools.CallContextFrom(ctx)
	content, _ := args["content"].(string)
	channel, _ := args["channel"].(string)
	chat, _ := args["chat_id"].(string)
	if channel == "" {
		channel = cc.Channel
	}
	if chat == "" {
		chat = cc.ChatID
	}
	if channel == "" || chat == "" {
		return tools.Result{}, errors.New("no current chat: give channel and chat_id")
	}
	var media []bus.Media
	if raw, ok := args["files"].([]any); ok {
		for _, f := range raw {
			p, _ := f.(string)
			m, err := t.attachment(p)
			if err != nil {
				return tools.Result{}, err
			}
			media = append(media, m)
		}
	}
	if strings.TrimSpace(content) == "" && len(media) == 0 {
		return tools.Result{}, errors.New("nothing to send: content is empty")
	}
	out := bus.Outbound{Channel: channel, ChatID: chat, Kind: bus.KindMessage, Content: content, Media: media}
	if channel == cc.Channel && chat == cc.ChatID {
		out.SessionKey = cc.SessionKey
	}
	if err := t.out.PublishOutbound(ctx, out); err != nil {
		return tools.Result{}, fmt.Errorf("send: %w", err)
	}
	if channel == cc.Channel && chat == cc.ChatID {
		tools.TurnFrom(ctx).RecordSent(content)
	}
	what := "message"
	if len(media) > 0 {
		what = fmt.Sprintf("message with %d file(s)", len(media))
	}
	return tools.Result{Content: fmt.Sprintf("Sent %s to %s:%s.", what, channel, chat)}, nil
}

func (t *Tool) attachment(p string) (bus.Media, error) {
	if p == "" {
		return bus.Media{}, errors.New("empty file path")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(t.workspace, p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return bus.Media{}, fmt.Errorf("file %s: %w", p, err)
	}
	if t.restrict {
		ws, _ := filepath.EvalSymlinks(t.workspace)
		if rel, err := filepath.Rel(ws, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return bus.Media{}, fmt.Errorf("file %s is outside the workspace", p)
		}
	}
	fi, err := os.Stat(real)
	if err != nil {
		return bus.Media{}, fmt.Errorf("file %s: %w", p, err)
	}
	if fi.IsDir() {
		return bus.Media{}, fmt.Errorf("%s is a folder, not a file", p)
	}
	return bus.Media{Path: real, Name: filepath.Base(real), Size: fi.Size(), MIMEType: mime.TypeByExtension(filepath.Ext(real))}, nil
}
