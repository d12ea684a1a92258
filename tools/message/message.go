// Package message is the `message` tool: the agent sends text, and files as
// attachments, to the current chat or to a named channel and chat while it
// keeps working. It is the only tool that can attach files.
//
// Targets: besides the current chat, the tool reaches only chats that are
// allowed on their channel (Targets.Admits with the chat id; for a direct
// chat that is the user's id, so a group is reachable only when its own id
// is on the channel's allowFrom or allowFrom is "*"), unless
// Options.AllowAnyTarget is set.
//
// Attachments: with Options.Restrict the file is resolved and opened once
// through a handle on the workspace (see tools/internal/pathguard), and its
// bytes are copied into Options.MediaDir; the outbound message carries the
// copy's path. A channel adapter that opens the path later therefore
// uploads what was checked, even if the workspace changed meanwhile.
//
// The tool is safe for concurrent use.
package message

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"
	"strings"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/internal/pathguard"
)

// Outbox is where messages go (the bus).
type Outbox interface {
	PublishOutbound(ctx context.Context, m bus.Outbound) error
}

// Targets says whether a chat other than the current one may be messaged.
// The gateway's access gate implements it (relay.Gate.Admits). It must
// not block and is called concurrently.
type Targets interface {
	// Admits reports whether id is allowed on channel; the tool passes the
	// target chat id, which for a direct chat is the user's id.
	Admits(channel, id string) bool
}

// Options configures the tool.
type Options struct {
	// Workspace is the base of relative attachment paths (required).
	Workspace string
	// Restrict keeps attachments inside the workspace
	// (tools.restrictToWorkspace).
	Restrict bool
	// MediaDir is where attachments are copied before they are sent when
	// Restrict is on (the gateway's media folder; copies go to its
	// "outbound" sub-folder).
	MediaDir string
	// Targets decides which other chats may be messaged; nil allows only
	// the current chat.
	Targets Targets
	// AllowAnyTarget lifts the target check (tools.message.allowAnyTarget).
	AllowAnyTarget bool
	// OwnDirs are folders nanobot itself writes (the generated-images
	// folder): an absolute path inside one is attached as it is, even with
	// Restrict on. It is opened through an os.Root on the folder, so a
	// symbolic link cannot lead out of it.
	OwnDirs []string
}

// Tool is the message tool.
type Tool struct {
	out  Outbox
	opts Options
}

var _ tools.Tool = (*Tool)(nil)

// New returns the tool. It does no IO.
func New(out Outbox, opts Options) *Tool {
	return &Tool{out: out, opts: opts}
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
	current := channel == cc.Channel && chat == cc.ChatID
	if !current && !t.allowedTarget(channel, chat) {
		return tools.Result{}, fmt.Errorf("not sent: %s:%s is not the current chat and not a chat allowed on %s (its allowFrom list or an approved pairing); "+
			"send to the current chat instead, or ask the owner to allow that chat (tools.message.allowAnyTarget lifts this check)", channel, chat, channel)
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
	if current {
		out.SessionKey = cc.SessionKey
	}
	if err := t.out.PublishOutbound(ctx, out); err != nil {
		return tools.Result{}, fmt.Errorf("send: %w", err)
	}
	if current {
		tools.TurnFrom(ctx).RecordSent(content)
	}
	what := "message"
	if len(media) > 0 {
		what = fmt.Sprintf("message with %d file(s)", len(media))
	}
	return tools.Result{Content: fmt.Sprintf("Sent %s to %s:%s.", what, channel, chat)}, nil
}

func (t *Tool) allowedTarget(channel, chat string) bool {
	return t.opts.AllowAnyTarget || t.opts.Targets != nil && t.opts.Targets.Admits(channel, chat)
}

// attachment checks the file p, opens it once and returns what to send:
// with Restrict a private copy of the bytes it read, otherwise its path.
func (t *Tool) attachment(p string) (bus.Media, error) {
	if p == "" {
		return bus.Media{}, errors.New("empty file path")
	}
	if m, ok, err := t.ownFile(p); ok {
		return m, err
	}
	g, err := pathguard.New(t.opts.Workspace, t.opts.Restrict)
	if err != nil {
		return bus.Media{}, fmt.Errorf("message: %w", err)
	}
	loc, err := g.Open(p)
	if err != nil {
		return bus.Media{}, err
	}
	defer loc.Root.Close()
	f, err := loc.Root.OpenFile(loc.Name, os.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return bus.Media{}, fmt.Errorf("file %s does not exist", p)
		}
		return bus.Media{}, fmt.Errorf("file %s: %w", p, loc.Check(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return bus.Media{}, fmt.Errorf("file %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		return bus.Media{}, fmt.Errorf("%s is a folder or special file, not a file", p)
	}
	name := filepath.Base(loc.Real)
	m := bus.Media{Path: loc.Real, Name: name, Size: fi.Size(), MIMEType: mime.TypeByExtension(filepath.Ext(name))}
	if !t.opts.Restrict {
		return m, nil
	}
	m.Path, m.Size, err = t.copyOut(f, name)
	if err != nil {
		return bus.Media{}, fmt.Errorf("file %s: %w", p, err)
	}
	return m, nil
}

// ownFile attaches a file from one of Options.OwnDirs; ok is false when p
// is not inside one.
func (t *Tool) ownFile(p string) (bus.Media, bool, error) {
	if !filepath.IsAbs(p) {
		return bus.Media{}, false, nil
	}
	for _, dir := range t.opts.OwnDirs {
		rel, err := filepath.Rel(dir, filepath.Clean(p))
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			return bus.Media{}, true, fmt.Errorf("file %s: %w", p, err)
		}
		defer root.Close()
		fi, err := root.Stat(rel)
		if err != nil {
			return bus.Media{}, true, fmt.Errorf("file %s: %w", p, err)
		}
		if !fi.Mode().IsRegular() {
			return bus.Media{}, true, fmt.Errorf("%s is a folder or special file, not a file", p)
		}
		name := filepath.Base(rel)
		return bus.Media{Path: filepath.Join(dir, rel), Name: name, Size: fi.Size(), MIMEType: mime.TypeByExtension(filepath.Ext(name))}, true, nil
	}
	return bus.Media{}, false, nil
}

// copyOut copies r into a new file (0600) under MediaDir/outbound, written
// to a temporary name and renamed, and returns its path and size.
func (t *Tool) copyOut(r io.Reader, name string) (string, int64, error) {
	if t.opts.MediaDir == "" {
		return "", 0, errors.New("message: no media folder to stage attachments in")
	}
	dir := filepath.Join(t.opts.MediaDir, "outbound")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", 0, fmt.Errorf("stage attachment: %w", err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	final := filepath.Join(dir, hex.EncodeToString(b[:])+"-"+safeName(name))
	tmp, err := os.CreateTemp(dir, ".staging-*")
	if err != nil {
		return "", 0, fmt.Errorf("stage attachment: %w", err)
	}
	n, err := io.Copy(tmp, r)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), final)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", 0, fmt.Errorf("stage attachment: %w", err)
	}
	return final, n, nil
}

// safeName keeps a file name to letters, digits, '.', '-' and '_'.
func safeName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
	return strings.TrimLeft(s, ".")
}
