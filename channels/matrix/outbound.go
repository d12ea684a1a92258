package matrix

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto/attachment"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/format"
	"maunium.net/go/mautrix/id"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

// Send implements channels.Channel: one m.room.message with the Markdown as
// the plain body and rendered HTML as formatted_body, in the thread the
// user wrote in, mentioning nobody.
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	if m.ChatID == "" {
		return channels.MessageRef{}, channels.Permanentf("matrix: send: empty room id")
	}
	if strings.TrimSpace(m.Content) == "" {
		return channels.MessageRef{}, channels.Permanentf("matrix: send to %s: empty message", m.ChatID)
	}
	if err := c.prepareSend(ctx, id.RoomID(m.ChatID)); err != nil {
		return channels.MessageRef{}, c.sendError("send to "+m.ChatID, err)
	}
	content := render(m.Content)
	c.relate(&content, m)
	resp, err := c.cli.SendMessageEvent(ctx, id.RoomID(m.ChatID), event.EventMessage, &content)
	if err != nil {
		return channels.MessageRef{}, c.sendError("send to "+m.ChatID, err)
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: string(resp.EventID)}, nil
}

// Edit implements channels.Editor (streaming): an m.replace of the message.
func (c *Channel) Edit(ctx context.Context, r channels.MessageRef, m bus.Outbound) error {
	if strings.TrimSpace(m.Content) == "" {
		return nil
	}
	if err := c.prepareSend(ctx, id.RoomID(r.ChatID)); err != nil {
		return c.sendError(fmt.Sprintf("edit %s in %s", r.MessageID, r.ChatID), err)
	}
	content := render(m.Content)
	content.SetEdit(id.EventID(r.MessageID))
	if _, err := c.cli.SendMessageEvent(ctx, id.RoomID(r.ChatID), event.EventMessage, &content); err != nil {
		return c.sendError(fmt.Sprintf("edit %s in %s", r.MessageID, r.ChatID), err)
	}
	return nil
}

// Typing implements channels.Typer: "typing…" for up to 30 s.
func (c *Channel) Typing(ctx context.Context, chatID string, _ bus.Metadata) error {
	if _, err := c.cli.UserTyping(ctx, id.RoomID(chatID), true, 30*time.Second); err != nil {
		return c.sendError("typing in "+chatID, err)
	}
	return nil
}

// SendMedia implements channels.MediaSender: the text (if any), then each
// file uploaded to the media repository and sent as m.image, m.audio,
// m.video or m.file. Media with only a URL are linked in the text.
func (c *Channel) SendMedia(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	text, files, err := media.Split(m)
	if err != nil {
		return channels.MessageRef{}, channels.Permanentf("matrix: send file: %w", err)
	}
	var first channels.MessageRef
	if text != "" {
		part := m
		part.Content, part.Media = text, nil
		ref, err := c.Send(ctx, part)
		if err != nil {
			return channels.MessageRef{}, err
		}
		first = ref
	}
	for _, md := range files {
		ref, err := c.sendFile(ctx, m, md)
		if err != nil {
			if first.MessageID != "" { // a retry would send the text again
				var pe *channels.PermanentError
				if !errors.As(err, &pe) {
					err = &channels.PermanentError{Err: err}
				}
			}
			return first, err
		}
		if first.MessageID == "" {
			first = ref
		}
	}
	return first, nil
}

func (c *Channel) sendFile(ctx context.Context, m bus.Outbound, md bus.Media) (channels.MessageRef, error) {
	st, err := os.Stat(md.Path)
	if err != nil || st.IsDir() || st.Size() > c.cfg.MaxMediaBytes {
		return channels.MessageRef{}, channels.Permanentf("matrix: send file %s: not a readable file of at most %s", md.Path, media.Size(c.cfg.MaxMediaBytes))
	}
	data, err := os.ReadFile(md.Path)
	if err != nil {
		return channels.MessageRef{}, channels.Permanentf("matrix: send file: %w", err)
	}
	mime := md.MIMEType
	if mime == "" {
		mime = http.DetectContentType(data)
	}
	name := md.Name
	if name == "" {
		name = filepath.Base(md.Path)
	}
	room := id.RoomID(m.ChatID)
	if err := c.prepareSend(ctx, room); err != nil {
		return channels.MessageRef{}, c.sendError("send file to "+m.ChatID, err)
	}
	encrypted, err := c.encryptedRoom(ctx, room)
	if err != nil {
		return channels.MessageRef{}, c.sendError("send file to "+m.ChatID, err)
	}
	upload := mautrix.ReqUploadMedia{ContentBytes: data, ContentType: mime, FileName: name}
	var file *attachment.EncryptedFile
	if encrypted {
		// The homeserver keeps only ciphertext; the key travels in the
		// (encrypted) event.
		file = attachment.NewEncryptedFile()
		upload.ContentBytes = file.Encrypt(data)
		upload.ContentType, upload.FileName = "application/octet-stream", ""
	}
	up, err := c.cli.UploadMedia(ctx, upload)
	if err != nil {
		return channels.MessageRef{}, c.sendError("upload "+name, err)
	}
	content := event.MessageEventContent{
		MsgType: msgTypeFor(mime), Body: name, FileName: name, URL: up.ContentURI.CUString(),
		Info: &event.FileInfo{MimeType: mime, Size: len(data)}, Mentions: &event.Mentions{},
	}
	if file != nil {
		content.URL = ""
		content.File = &event.EncryptedFileInfo{EncryptedFile: *file, URL: up.ContentURI.CUString()}
	}
	c.relate(&content, m)
	resp, err := c.cli.SendMessageEvent(ctx, id.RoomID(m.ChatID), event.EventMessage, &content)
	if err != nil {
		return channels.MessageRef{}, c.sendError("send file to "+m.ChatID, err)
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: string(resp.EventID)}, nil
}

func msgTypeFor(mime string) event.MessageType {
	switch {
	case strings.HasPrefix(mime, "image/"):
		return event.MsgImage
	case strings.HasPrefix(mime, "audio/"):
		return event.MsgAudio
	case strings.HasPrefix(mime, "video/"):
		return event.MsgVideo
	}
	return event.MsgFile
}

// render turns Markdown into message content: the Markdown itself as the
// plain body (readable in any client, code fences intact) and HTML as
// formatted_body. Raw HTML in the text is escaped, not passed through.
func render(markdown string) event.MessageEventContent {
	html := format.RenderMarkdown(markdown, true, false)
	content := event.MessageEventContent{MsgType: event.MsgText, Body: markdown, Mentions: &event.Mentions{}}
	if html.Format == event.FormatHTML && html.FormattedBody != "" {
		content.Format, content.FormattedBody = event.FormatHTML, html.FormattedBody
	}
	return content
}

// relate puts the reply in the thread the user wrote in.
func (c *Channel) relate(content *event.MessageEventContent, m bus.Outbound) {
	root := m.ThreadID
	if root == "" {
		root = m.Metadata["thread_root"] // a reply written before ThreadID
	}
	if root == "" {
		return
	}
	content.RelatesTo = &event.RelatesTo{Type: event.RelThread, EventID: id.EventID(root), IsFallingBack: true}
	if m.ReplyTo != "" {
		content.RelatesTo.InReplyTo = &event.InReplyTo{EventID: id.EventID(m.ReplyTo)}
	}
}

// sendError maps a failure: M_LIMIT_EXCEEDED to RetryAfterError, other 4xx
// (forbidden, unknown room, too large) to PermanentError.
func (c *Channel) sendError(what string, err error) error {
	wrapped := fmt.Errorf("matrix: %s: %s", what, c.redact.Error(err))
	var he mautrix.HTTPError
	if errors.As(err, &he) && he.RespError != nil {
		re := he.RespError
		if re.ErrCode == mautrix.MLimitExceeded.ErrCode || re.StatusCode == http.StatusTooManyRequests {
			after := time.Second
			if ms, ok := re.ExtraData["retry_after_ms"].(float64); ok && ms > 0 {
				after = time.Duration(ms) * time.Millisecond
			}
			return &channels.RetryAfterError{After: after, Err: wrapped}
		}
		if re.StatusCode >= 400 && re.StatusCode < 500 {
			return &channels.PermanentError{Err: wrapped}
		}
	}
	return wrapped
}
