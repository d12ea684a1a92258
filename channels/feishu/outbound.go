package feishu

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

// Send implements channels.Channel: one message (the dispatcher already
// split it to MessageLimit). The first message of a stream becomes a
// streaming card; everything else a post message with Markdown. In a topic
// (topicIsolation) it is a reply in the topic.
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	if err := channels.CheckSend("feishu", m); err != nil {
		return channels.MessageRef{}, err
	}
	if c.cfg.Streaming && m.StreamID != "" && !m.Final && m.Kind != bus.KindStreamEnd {
		return c.sendCard(ctx, m)
	}
	id, err := c.post(ctx, m, "post", postContent(toPost(m.Content)))
	if err != nil {
		return channels.MessageRef{}, err
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: id}, nil
}

// postContent is a post message of one Markdown element.
func postContent(md string) map[string]any {
	return map[string]any{"zh_cn": map[string]any{"content": [][]map[string]string{{{"tag": "md", "text": md}}}}}
}

// post sends a message of msgType to m's chat, or into m's topic, and
// returns its message id.
func (c *Channel) post(ctx context.Context, m bus.Outbound, msgType string, content any) (string, error) {
	body, err := json.Marshal(content)
	if err != nil {
		return "", channels.Permanentf("feishu: encoding a %s message: %w", msgType, err)
	}
	req := map[string]any{"msg_type": msgType, "content": string(body), "uuid": newUUID()}
	var out struct {
		Data struct {
			MessageID string `json:"message_id"`
		} `json:"data"`
	}
	path := "/open-apis/im/v1/messages?receive_id_type=chat_id"
	req["receive_id"] = m.ChatID
	if target := threadTarget(m); target != "" {
		path = "/open-apis/im/v1/messages/" + url.PathEscape(target) + "/reply"
		delete(req, "receive_id")
		req["reply_in_thread"] = true
	}
	if err := c.call(ctx, http.MethodPost, path, req, &out); err != nil {
		return "", fmt.Errorf("feishu: send to chat %s: %w", m.ChatID, err)
	}
	if out.Data.MessageID == "" {
		return "", fmt.Errorf("feishu: send to chat %s: no message id in the answer", m.ChatID)
	}
	return out.Data.MessageID, nil
}

// threadTarget is the message to reply to so that the answer stays in its
// topic: set when the inbound message was in an isolated topic.
func threadTarget(m bus.Outbound) string {
	if metaString(m.Metadata, "topic") == "" {
		return ""
	}
	if id := metaString(m.Metadata, "message_id"); id != "" {
		return id
	}
	return m.ReplyTo
}

func metaString(meta bus.Metadata, key string) string { return meta[key] }

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// React adds a reaction to a message (reactEmoji on receipt): emoji is a Feishu emoji type
// ("THUMBSUP", "OK", "DONE", …).
func (c *Channel) React(ctx context.Context, _, messageID, emoji string) error {
	body := map[string]any{"reaction_type": map[string]string{"emoji_type": emoji}}
	if err := c.call(ctx, http.MethodPost, "/open-apis/im/v1/messages/"+url.PathEscape(messageID)+"/reactions", body, nil); err != nil {
		return fmt.Errorf("feishu: react to message %s: %w", messageID, err)
	}
	return nil
}

// SendMedia implements channels.MediaSender: the text as a post message,
// then each file uploaded and sent as an image or file message. Media with
// only a URL are linked in the text. It returns the first message.
func (c *Channel) SendMedia(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	if m.ChatID == "" {
		return channels.MessageRef{}, channels.Permanentf("feishu: send: empty chat id")
	}
	text, files, err := media.Split(m)
	if err != nil {
		return channels.MessageRef{}, channels.Permanentf("feishu: send file: %w", err)
	}
	var parts channels.Parts
	if text != "" {
		id, err := c.post(ctx, m, "post", postContent(toPost(text)))
		if err != nil {
			return parts.Fail(err)
		}
		parts.Sent(channels.MessageRef{ChatID: m.ChatID, MessageID: id})
	}
	for _, f := range files {
		id, err := c.sendFile(ctx, m, f)
		if err != nil {
			return parts.Fail(err)
		}
		parts.Sent(channels.MessageRef{ChatID: m.ChatID, MessageID: id})
	}
	if !parts.Any() {
		return parts.First(), channels.Permanentf("feishu: send to chat %s: empty message", m.ChatID)
	}
	return parts.First(), nil
}

// sendFile uploads one file and sends it: images as image messages (up to
// 10 MB), the rest as file messages (up to 30 MB).
func (c *Channel) sendFile(ctx context.Context, m bus.Outbound, f bus.Media) (string, error) {
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return "", channels.Permanentf("feishu: send file: %w", err)
	}
	name := f.Name
	if name == "" {
		name = filepath.Base(f.Path)
	}
	mime := f.MIMEType
	if mime == "" {
		mime = http.DetectContentType(data)
	}
	isImage := strings.HasPrefix(mime, "image/") && len(data) <= 10<<20
	if !isImage && len(data) > 30<<20 {
		return "", channels.Permanentf("feishu: send file %s: %s is over the 30 MB upload limit", name, media.Size(int64(len(data))))
	}
	path, field := "/open-apis/im/v1/files", "file"
	fields := [][2]string{{"file_type", fileType(name)}, {"file_name", name}}
	if isImage {
		path, field = "/open-apis/im/v1/images", "image"
		fields = [][2]string{{"image_type", "message"}}
	}
	out, err := c.upload(ctx, path, field, name, fields, data)
	if err != nil {
		return "", err
	}
	if isImage {
		if out.Data.ImageKey == "" {
			return "", fmt.Errorf("feishu: upload %s: no image_key in the answer", name)
		}
		return c.post(ctx, m, "image", map[string]string{"image_key": out.Data.ImageKey})
	}
	if out.Data.FileKey == "" {
		return "", fmt.Errorf("feishu: upload %s: no file_key in the answer", name)
	}
	return c.post(ctx, m, "file", map[string]string{"file_key": out.Data.FileKey})
}

// uploaded is the answer of the image and file upload APIs.
type uploaded struct {
	Data struct {
		ImageKey string `json:"image_key"`
		FileKey  string `json:"file_key"`
	} `json:"data"`
}

// upload posts data as the multipart part field (named name) with the
// form fields to path, renewing a stale token once.
func (c *Channel) upload(ctx context.Context, path, field, name string, fields [][2]string, data []byte) (uploaded, error) {
	var out uploaded
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, f := range fields {
		_ = w.WriteField(f[0], f[1])
	}
	part, err := w.CreateFormFile(field, name)
	if err == nil {
		_, err = part.Write(data)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return out, fmt.Errorf("feishu: send file %s: %w", name, err)
	}
	send := func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.base()+path, bytes.NewReader(buf.Bytes()))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", w.FormDataContentType())
		return c.api.Send(req, &out)
	}
	err = send()
	if stale(err) {
		if tok, terr := c.tokens.Get(ctx); terr == nil {
			c.tokens.Invalidate(tok)
		}
		err = send()
	}
	if err != nil {
		return out, fmt.Errorf("feishu: upload %s: %w", name, err)
	}
	return out, nil
}

// fileType is the upload API's file_type for a name.
func fileType(name string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".opus":
		return "opus"
	case ".mp4":
		return "mp4"
	case ".pdf":
		return "pdf"
	case ".doc", ".docx":
		return "doc"
	case ".xls", ".xlsx":
		return "xls"
	case ".ppt", ".pptx":
		return "ppt"
	}
	return "stream"
}
