package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"google.golang.org/protobuf/proto"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

// ErrNotConnected is returned by sends while Run is not running.
var ErrNotConnected = errors.New("whatsapp: not connected")

func (c *Channel) current() (client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cli == nil {
		return nil, ErrNotConnected
	}
	return c.cli, nil
}

// target is the client to send with and the chat to send to: an error
// while the channel is not connected, a permanent one for a chat id that
// is not a JID.
func (c *Channel) target(chatID string) (client, types.JID, error) {
	cli, err := c.current()
	if err != nil {
		return nil, types.EmptyJID, err
	}
	to, err := chatJID(chatID)
	if err != nil {
		return nil, types.EmptyJID, err
	}
	return cli, to, nil
}

func chatJID(id string) (types.JID, error) {
	j, err := types.ParseJID(id)
	if err != nil || j.User == "" {
		return types.EmptyJID, channels.Permanentf("whatsapp: %q is not a chat id", id)
	}
	return j, nil
}

// Send implements channels.Channel: one text message, Markdown turned into
// WhatsApp's formatting.
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	cli, to, err := c.target(m.ChatID)
	if err != nil {
		return channels.MessageRef{}, err
	}
	if strings.TrimSpace(m.Content) == "" {
		return channels.MessageRef{}, channels.Permanentf("whatsapp: empty message")
	}
	resp, err := cli.SendMessage(ctx, to, &waE2E.Message{Conversation: proto.String(ToWhatsApp(m.Content))})
	if err != nil {
		return channels.MessageRef{}, fmt.Errorf("whatsapp: send to %s: %w", to, err)
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: resp.ID}, nil
}

// Typing implements channels.Typer: "typing…" in the chat.
func (c *Channel) Typing(ctx context.Context, chatID string, _ bus.Metadata) error {
	cli, to, err := c.target(chatID)
	if err != nil {
		return err
	}
	return cli.SendChatPresence(ctx, to, types.ChatPresenceComposing, types.ChatPresenceMediaText)
}

// SendMedia implements channels.MediaSender: each file uploaded (encrypted
// by whatsmeow) and sent as an image, audio or document, the text as the
// first file's caption. Media with only a URL are linked in the text.
func (c *Channel) SendMedia(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	cli, to, err := c.target(m.ChatID)
	if err != nil {
		return channels.MessageRef{}, err
	}
	caption, files, err := media.Split(m)
	if err != nil {
		return channels.MessageRef{}, channels.Permanentf("whatsapp: send file: %w", err)
	}
	if len(files) == 0 {
		text := m
		text.Content, text.Media = caption, nil
		return c.Send(ctx, text)
	}
	var first channels.MessageRef
	for i, md := range files {
		msg, err := c.fileMessage(ctx, cli, md)
		if err != nil {
			if i > 0 {
				err = &channels.PermanentError{Err: err}
			}
			return first, err
		}
		if i == 0 && caption != "" {
			setCaption(msg, ToWhatsApp(caption))
		}
		resp, err := cli.SendMessage(ctx, to, msg)
		if err != nil {
			err = fmt.Errorf("whatsapp: send file to %s: %w", to, err)
			if i > 0 {
				err = &channels.PermanentError{Err: err}
			}
			return first, err
		}
		if i == 0 {
			first = channels.MessageRef{ChatID: m.ChatID, MessageID: resp.ID}
		}
	}
	return first, nil
}

func (c *Channel) fileMessage(ctx context.Context, cli client, md bus.Media) (*waE2E.Message, error) {
	st, err := os.Stat(md.Path)
	if err != nil || st.IsDir() || st.Size() > c.cfg.MaxMediaBytes {
		return nil, channels.Permanentf("whatsapp: send file %s: not a readable file of at most %s", md.Path, media.Size(c.cfg.MaxMediaBytes))
	}
	data, err := os.ReadFile(md.Path)
	if err != nil {
		return nil, channels.Permanentf("whatsapp: send file: %w", err)
	}
	mime := md.MIMEType
	if mime == "" {
		mime = http.DetectContentType(data)
	}
	name := md.Name
	if name == "" {
		name = filepath.Base(md.Path)
	}
	kind := whatsmeow.MediaDocument
	switch {
	case strings.HasPrefix(mime, "image/"):
		kind = whatsmeow.MediaImage
	case strings.HasPrefix(mime, "audio/"):
		kind = whatsmeow.MediaAudio
	}
	up, err := cli.Upload(ctx, data, kind)
	if err != nil {
		return nil, fmt.Errorf("whatsapp: upload %s: %w", name, err)
	}
	n := uint64(len(data))
	switch kind {
	case whatsmeow.MediaImage:
		return &waE2E.Message{ImageMessage: &waE2E.ImageMessage{
			URL: proto.String(up.URL), DirectPath: proto.String(up.DirectPath), MediaKey: up.MediaKey,
			FileEncSHA256: up.FileEncSHA256, FileSHA256: up.FileSHA256, FileLength: &n, Mimetype: proto.String(mime),
		}}, nil
	case whatsmeow.MediaAudio:
		return &waE2E.Message{AudioMessage: &waE2E.AudioMessage{
			URL: proto.String(up.URL), DirectPath: proto.String(up.DirectPath), MediaKey: up.MediaKey,
			FileEncSHA256: up.FileEncSHA256, FileSHA256: up.FileSHA256, FileLength: &n, Mimetype: proto.String(mime),
			PTT: proto.Bool(strings.Contains(mime, "ogg")),
		}}, nil
	}
	return &waE2E.Message{DocumentMessage: &waE2E.DocumentMessage{
		URL: proto.String(up.URL), DirectPath: proto.String(up.DirectPath), MediaKey: up.MediaKey,
		FileEncSHA256: up.FileEncSHA256, FileSHA256: up.FileSHA256, FileLength: &n, Mimetype: proto.String(mime),
		FileName: proto.String(name), Title: proto.String(name),
	}}, nil
}

func setCaption(msg *waE2E.Message, caption string) {
	switch {
	case msg.ImageMessage != nil:
		msg.ImageMessage.Caption = proto.String(caption)
	case msg.DocumentMessage != nil:
		msg.DocumentMessage.Caption = proto.String(caption)
	}
}
