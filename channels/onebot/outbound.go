package onebot

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
	"github.com/nanobot-go/nanobot/channels/media"
)

// outSeg is a segment as sent.
type outSeg struct {
	Type string            `json:"type"`
	Data map[string]string `json:"data"`
}

func textSeg(s string) outSeg { return outSeg{Type: "text", Data: map[string]string{"text": s}} }

// target reads a ChatID: the action and the id parameter.
func target(chatID string) (action, key string, id int64, err error) {
	action, key, num := "send_private_msg", "user_id", chatID
	if g, ok := strings.CutPrefix(chatID, "group:"); ok {
		action, key, num = "send_group_msg", "group_id", g
	}
	id, err = strconv.ParseInt(num, 10, 64)
	if err != nil || id <= 0 {
		return "", "", 0, channels.Permanentf("onebot: chat id %q is neither a QQ number nor group:<number>", chatID)
	}
	return action, key, id, nil
}

// Send implements channels.Channel: one message (already split to
// MessageLimit), quoting the message it answers.
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	text := Format(m.Content)
	if text == "" {
		return channels.MessageRef{}, channels.Permanentf("onebot: send to %s: empty message", m.ChatID)
	}
	return c.send(ctx, m, []outSeg{textSeg(text)})
}

// send posts segments to m's chat, with a reply segment first when m
// answers a message.
func (c *Channel) send(ctx context.Context, m bus.Outbound, segs []outSeg) (channels.MessageRef, error) {
	action, key, id, err := target(m.ChatID)
	if err != nil {
		return channels.MessageRef{}, err
	}
	if m.ReplyTo != "" {
		segs = append([]outSeg{{Type: "reply", Data: map[string]string{"id": m.ReplyTo}}}, segs...)
	}
	cn := c.liveConn()
	if cn == nil {
		return channels.MessageRef{}, fmt.Errorf("onebot: send to %s: %w", m.ChatID, errNotConnected)
	}
	data, err := cn.call(ctx, action, map[string]any{key: id, "message": segs}, c.callTimeout)
	if err != nil {
		var ae *kit.APIError
		if errors.As(err, &ae) && (ae.Code == "1400" || ae.Code == "1404") {
			return channels.MessageRef{}, channels.Permanentf("onebot: send to %s: %w", m.ChatID, err)
		}
		return channels.MessageRef{}, fmt.Errorf("onebot: send to %s: %w", m.ChatID, err)
	}
	var out struct {
		MessageID json.RawMessage `json:"message_id"`
	}
	if err := json.Unmarshal(data, &out); err != nil || idOf(out.MessageID) == "" {
		return channels.MessageRef{}, fmt.Errorf("onebot: send to %s: the answer has no message_id", m.ChatID)
	}
	mid := idOf(out.MessageID)
	c.mine.Seen(mid)
	return channels.MessageRef{ChatID: m.ChatID, MessageID: mid}, nil
}

// SendMedia implements channels.MediaSender: images go as image segments
// (base64:// or, with imageMode "file", file:// paths), after the text.
// OneBot v11 has no segment for other files: they are named in the text.
func (c *Channel) SendMedia(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	var segs []outSeg
	var notes []string
	for _, md := range m.Media {
		img := strings.HasPrefix(md.MIMEType, "image/") || isImageName(md.Name) || isImageName(md.Path) || isImageName(md.URL)
		switch {
		case !img && md.URL != "":
			notes = append(notes, md.URL)
		case !img:
			notes = append(notes, fmt.Sprintf("[file %s not sent: OneBot v11 sends images only]", firstNonEmpty(md.Name, filepath.Base(md.Path))))
			c.log.Warn("onebot: a file that is not an image was not sent", "chat_id", m.ChatID, "name", firstNonEmpty(md.Name, filepath.Base(md.Path)))
		case md.Path == "":
			segs = append(segs, outSeg{Type: "image", Data: map[string]string{"file": md.URL}})
		default:
			file, err := c.imageFile(md.Path)
			if err != nil {
				return channels.MessageRef{}, err
			}
			segs = append(segs, outSeg{Type: "image", Data: map[string]string{"file": file}})
		}
	}
	text := Format(strings.TrimSpace(strings.Join(append([]string{m.Content}, notes...), "\n")))
	if text != "" {
		segs = append([]outSeg{textSeg(text)}, segs...)
	}
	if len(segs) == 0 {
		return channels.MessageRef{}, channels.Permanentf("onebot: send to %s: empty message", m.ChatID)
	}
	return c.send(ctx, m, segs)
}

// imageFile is an image segment's file for a local path.
func (c *Channel) imageFile(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil || st.IsDir() || st.Size() > c.cfg.MaxMediaBytes {
		return "", channels.Permanentf("onebot: send image %s: not a readable file of at most %s", path, media.Size(c.cfg.MaxMediaBytes))
	}
	if c.cfg.ImageMode == ImageFile {
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", channels.Permanentf("onebot: send image %s: %w", path, err)
		}
		return "file://" + filepath.ToSlash(abs), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", channels.Permanentf("onebot: send image %s: %w", path, err)
	}
	return "base64://" + base64.StdEncoding.EncodeToString(b), nil
}

func isImageName(s string) bool {
	switch strings.ToLower(filepath.Ext(s)) {
	case ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp":
		return true
	}
	return false
}
