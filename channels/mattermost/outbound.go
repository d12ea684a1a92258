package mattermost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
	"github.com/nanobot-go/nanobot/channels/media"
)

// newPost is the body of POST /api/v4/posts.
type newPost struct {
	ChannelID string   `json:"channel_id"`
	Message   string   `json:"message"`
	RootID    string   `json:"root_id,omitempty"`
	FileIDs   []string `json:"file_ids,omitempty"`
}

// Send implements channels.Channel: one post (already split to
// MessageLimit), in the thread the message came from.
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	if m.ChatID == "" {
		return channels.MessageRef{}, channels.Permanentf("mattermost: send: empty channel id")
	}
	if strings.TrimSpace(m.Content) == "" {
		return channels.MessageRef{}, channels.Permanentf("mattermost: send to channel %s: empty message", m.ChatID)
	}
	return c.post(ctx, newPost{ChannelID: m.ChatID, Message: m.Content, RootID: m.Metadata["root_id"]})
}

func (c *Channel) post(ctx context.Context, p newPost) (channels.MessageRef, error) {
	var created struct {
		ID string `json:"id"`
	}
	if err := c.api.Do(ctx, http.MethodPost, "/posts", p, &created); err != nil {
		return channels.MessageRef{}, fmt.Errorf("mattermost: post to channel %s: %w", p.ChannelID, err)
	}
	if created.ID == "" {
		return channels.MessageRef{}, fmt.Errorf("mattermost: post to channel %s: the answer has no post id", p.ChannelID)
	}
	c.answeredIn(p.RootID)
	return channels.MessageRef{ChatID: p.ChannelID, MessageID: created.ID}, nil
}

// Edit implements channels.Editor (streaming): the post shows m.Content.
func (c *Channel) Edit(ctx context.Context, r channels.MessageRef, m bus.Outbound) error {
	if strings.TrimSpace(m.Content) == "" {
		return nil
	}
	if err := c.api.Do(ctx, http.MethodPut, "/posts/"+r.MessageID+"/patch", map[string]string{"message": m.Content}, nil); err != nil {
		return fmt.Errorf("mattermost: edit post %s: %w", r.MessageID, err)
	}
	return nil
}

// Typing implements channels.Typer through the websocket's user_typing
// action (Mattermost shows it for a few seconds). It fails while the
// socket is reconnecting.
func (c *Channel) Typing(ctx context.Context, chatID string, meta bus.Metadata) error {
	ws := c.liveConn()
	if ws == nil {
		return errors.New("mattermost: typing: not connected")
	}
	if _, err := ws.action(ctx, "user_typing", map[string]string{"channel_id": chatID, "parent_id": meta["root_id"]}); err != nil {
		return fmt.Errorf("mattermost: typing in channel %s: %w", chatID, err)
	}
	return nil
}

// maxFiles is how many files one post may carry (Mattermost's default).
const maxFiles = 10

// SendMedia implements channels.MediaSender: the files are uploaded to the
// channel (POST /files) and attached to the post, ten per post; media with
// only a URL are linked in the text. It returns the first post.
func (c *Channel) SendMedia(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	if m.ChatID == "" {
		return channels.MessageRef{}, channels.Permanentf("mattermost: send: empty channel id")
	}
	text, files, err := media.Split(m)
	if err != nil {
		return channels.MessageRef{}, channels.Permanentf("mattermost: send file: %w", err)
	}
	var ids []string
	for _, md := range files {
		id, err := c.upload(ctx, m.ChatID, md)
		if err != nil {
			return channels.MessageRef{}, err
		}
		ids = append(ids, id)
	}
	root := m.Metadata["root_id"]
	var parts channels.Parts
	for i := 0; i == 0 || i < len(ids); i += maxFiles {
		p := newPost{ChannelID: m.ChatID, RootID: root, FileIDs: ids[i:min(i+maxFiles, len(ids))]}
		if i == 0 {
			p.Message = text
		}
		if p.Message == "" && len(p.FileIDs) == 0 {
			return channels.MessageRef{}, channels.Permanentf("mattermost: send to channel %s: empty message", m.ChatID)
		}
		ref, err := c.post(ctx, p)
		if err != nil {
			return parts.Fail(err)
		}
		parts.Sent(ref)
	}
	return parts.First(), nil
}

// upload sends one file to the channel and returns its file id.
func (c *Channel) upload(ctx context.Context, channelID string, md bus.Media) (string, error) {
	f, err := os.Open(md.Path)
	if err != nil {
		return "", channels.Permanentf("mattermost: send file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.IsDir() || st.Size() > c.cfg.MaxMediaBytes {
		return "", channels.Permanentf("mattermost: send file %s: not a readable file of at most %s", md.Path, media.Size(c.cfg.MaxMediaBytes))
	}
	name := md.Name
	if name == "" {
		name = filepath.Base(md.Path)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if err := mw.WriteField("channel_id", channelID); err != nil {
		return "", err
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="files"; filename=%q`, media.SafeName(name)))
	ct := md.MIMEType
	if ct == "" {
		ct = "application/octet-stream"
	}
	h.Set("Content-Type", ct)
	part, err := mw.CreatePart(h)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(part, f); err != nil {
		return "", fmt.Errorf("mattermost: send file %s: %w", md.Path, err)
	}
	if err := mw.Close(); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL+"/api/v4/files", &body)
	if err != nil {
		return "", fmt.Errorf("mattermost: upload: %w", err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	var out struct {
		FileInfos []fileInfo `json:"file_infos"`
	}
	if err := c.api.Send(req, &out); err != nil {
		return "", fmt.Errorf("mattermost: upload %s to channel %s: %w", name, channelID, err)
	}
	if len(out.FileInfos) != 1 || out.FileInfos[0].ID == "" {
		return "", fmt.Errorf("mattermost: upload %s: the answer lists %d files", name, len(out.FileInfos))
	}
	return out.FileInfos[0].ID, nil
}

// checkError finds Mattermost's error body ({"id", "message",
// "status_code"}) in an answer; successful answers have no status_code.
func checkError(body []byte) error {
	var e struct {
		ID         string `json:"id"`
		Message    string `json:"message"`
		StatusCode int    `json:"status_code"`
	}
	if json.Unmarshal(body, &e) != nil || e.StatusCode < 400 {
		return nil
	}
	return &kit.APIError{Code: e.ID, Message: e.Message}
}
