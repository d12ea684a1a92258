package qq

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
	"github.com/nanobot-go/nanobot/channels/media"
)

// Message types of REST v2.
const (
	msgText     = 0
	msgMarkdown = 2
	msgMedia    = 7
)

// codeDuplicateSeq is QQ's answer to a msg_id + msg_seq pair used before
// (消息被去重，请检查请求msgseq).
const codeDuplicateSeq = "40054005"

// target is where a chat id sends to.
type target struct {
	kind string // "users", "groups" or "dms"
	id   string
}

func parseChat(chatID string) (target, error) {
	var t target
	switch {
	case strings.HasPrefix(chatID, groupPrefix):
		t = target{"groups", strings.TrimPrefix(chatID, groupPrefix)}
	case strings.HasPrefix(chatID, dmsPrefix):
		t = target{"dms", strings.TrimPrefix(chatID, dmsPrefix)}
	default:
		t = target{"users", chatID}
	}
	if t.id == "" || strings.ContainsAny(t.id, "/?#:") {
		return target{}, fmt.Errorf("qq: chat id %q is not a user openid, group:<group openid> or dms:<guild id>", chatID)
	}
	return t, nil
}

func (t target) messagesPath() string {
	if t.kind == "dms" {
		return "/dms/" + url.PathEscape(t.id) + "/messages"
	}
	return "/v2/" + t.kind + "/" + url.PathEscape(t.id) + "/messages"
}

// replyTo is the inbound message an outbound answers: ReplyTo, else the
// message_id the inbound's metadata carried, else the last message received
// in the chat (QQ allows active messages only sparingly, so even a message
// that answers nothing in particular goes out as a passive reply while the
// chat's last message still allows one).
func (c *Channel) replyTo(m bus.Outbound) string {
	if m.ReplyTo != "" {
		return m.ReplyTo
	}
	if s := m.Metadata["message_id"]; s != "" {
		return s
	}
	return c.replies.last(m.ChatID)
}

// Send implements channels.Channel: one message (the dispatcher already
// split it to MessageLimit), as a passive reply when the message it answers
// still allows one.
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	t, err := parseChat(m.ChatID)
	if err != nil {
		return channels.MessageRef{}, &channels.PermanentError{Err: err}
	}
	if strings.TrimSpace(m.Content) == "" {
		return channels.MessageRef{}, channels.Permanentf("qq: send to %s: empty message", m.ChatID)
	}
	body := map[string]any{}
	switch {
	case t.kind == "dms":
		body["content"] = toPlain(m.Content)
	case c.cfg.MsgFormat == FormatMarkdown:
		body["msg_type"] = msgMarkdown
		body["markdown"] = map[string]string{"content": toMarkdown(m.Content)}
	default:
		body["msg_type"] = msgText
		body["content"] = toPlain(m.Content)
	}
	id, err := c.post(ctx, t, m.ChatID, c.replyTo(m), body)
	if err != nil {
		return channels.MessageRef{}, err
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: id}, nil
}

// post sends one message body to t, adding msg_id and msg_seq for a
// passive reply to msgID. A msg_seq the platform says was used already
// (the gateway restarted and counts from 1 again) is skipped over.
func (c *Channel) post(ctx context.Context, t target, chatID, msgID string, body map[string]any) (string, error) {
	for {
		seq, passive := c.replies.next(msgID, chatID)
		delete(body, "msg_id")
		delete(body, "msg_seq")
		if passive {
			body["msg_id"] = msgID
			if t.kind != "dms" {
				body["msg_seq"] = seq
			}
		}
		var out struct {
			ID string `json:"id"`
		}
		err := c.call(ctx, http.MethodPost, t.messagesPath(), body, &out)
		var ae *kit.APIError
		if passive && errors.As(err, &ae) && ae.Code == codeDuplicateSeq {
			c.log.Debug("qq: msg_seq used before; taking the next", "msg_id", msgID, "msg_seq", seq)
			continue
		}
		if err != nil {
			return "", fmt.Errorf("qq: send to %s: %w", chatID, err)
		}
		return out.ID, nil
	}
}

// SendMedia implements channels.MediaSender: the text first, then each
// file uploaded (POST /v2/{users|groups}/{id}/files) and sent as a media
// message. Guild direct messages get the files' URLs in the text instead.
// It returns the first message.
func (c *Channel) SendMedia(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	t, err := parseChat(m.ChatID)
	if err != nil {
		return channels.MessageRef{}, &channels.PermanentError{Err: err}
	}
	text := strings.TrimSpace(m.Content)
	if t.kind == "dms" {
		for _, md := range m.Media {
			if md.URL != "" {
				text = strings.TrimSpace(text + "\n" + md.URL)
			}
		}
		if text == "" {
			return channels.MessageRef{}, channels.Permanentf("qq: send to %s: files cannot be sent to guild direct messages", m.ChatID)
		}
		return c.Send(ctx, bus.Outbound{ChatID: m.ChatID, Content: text, ReplyTo: c.replyTo(m)})
	}
	var parts channels.Parts
	if text != "" {
		ref, err := c.Send(ctx, bus.Outbound{ChatID: m.ChatID, Content: text, ReplyTo: c.replyTo(m)})
		if err != nil {
			return parts.Fail(err)
		}
		parts.Sent(ref)
	}
	for _, md := range m.Media {
		info, err := c.upload(ctx, t, md)
		if err != nil {
			return parts.Fail(err)
		}
		id, err := c.post(ctx, t, m.ChatID, c.replyTo(m), map[string]any{"msg_type": msgMedia, "media": map[string]string{"file_info": info}})
		if err != nil {
			return parts.Fail(err)
		}
		parts.Sent(channels.MessageRef{ChatID: m.ChatID, MessageID: id})
	}
	if !parts.Any() {
		return parts.First(), channels.Permanentf("qq: send to %s: empty message", m.ChatID)
	}
	return parts.First(), nil
}

// File types of the upload API.
const (
	fileImage = 1 // png, jpg
	fileVideo = 2 // mp4
	fileVoice = 3 // silk
	fileOther = 4
)

func fileType(md bus.Media) int {
	mt := strings.ToLower(md.MIMEType)
	name := strings.ToLower(md.Name + md.Path + md.URL)
	switch {
	case strings.HasPrefix(mt, "image/"):
		return fileImage
	case strings.HasPrefix(mt, "video/"):
		return fileVideo
	case strings.Contains(mt, "silk"), strings.HasSuffix(name, ".silk"):
		return fileVoice
	case mt == "":
		for _, ext := range []string{".png", ".jpg", ".jpeg", ".gif"} {
			if strings.HasSuffix(name, ext) {
				return fileImage
			}
		}
		if strings.HasSuffix(name, ".mp4") {
			return fileVideo
		}
	}
	return fileOther
}

// upload sends one file (its bytes, base64, or its URL for the platform to
// fetch) and returns the file_info a media message refers to.
func (c *Channel) upload(ctx context.Context, t target, md bus.Media) (string, error) {
	body := map[string]any{"file_type": fileType(md), "srv_send_msg": false}
	switch {
	case md.Path != "":
		data, err := readFile(md.Path, c.cfg.MaxMediaBytes)
		if err != nil {
			return "", channels.Permanentf("qq: send file: %w", err)
		}
		body["file_data"] = base64.StdEncoding.EncodeToString(data)
	case md.URL != "":
		body["url"] = md.URL
	default:
		return "", channels.Permanentf("qq: send file: media has neither a path nor a URL")
	}
	var out struct {
		FileInfo string `json:"file_info"`
	}
	path := "/v2/" + t.kind + "/" + url.PathEscape(t.id) + "/files"
	if err := c.call(ctx, http.MethodPost, path, body, &out); err != nil {
		return "", fmt.Errorf("qq: upload to %s: %w", t.kind, err)
	}
	if out.FileInfo == "" {
		return "", fmt.Errorf("qq: upload to %s: the answer has no file_info", t.kind)
	}
	return out.FileInfo, nil
}

func readFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a folder", path)
	}
	data, err := media.ReadCapped(f, limit)
	if errors.Is(err, media.ErrTooLarge) {
		return nil, fmt.Errorf("%s is larger than %s", path, media.Size(limit))
	}
	return data, err
}
