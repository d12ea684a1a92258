package mattermost

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

// postedData is the data of a "posted" event.
type postedData struct {
	ChannelType string `json:"channel_type"`
	// Post is the post as a JSON string (Mattermost encodes it twice).
	Post       string `json:"post"`
	SenderName string `json:"sender_name"`
	TeamID     string `json:"team_id"`
	// Mentions is a JSON string holding an array of user ids, when any.
	Mentions string `json:"mentions"`
}

// post is a Mattermost post.
type post struct {
	ID        string         `json:"id"`
	UserID    string         `json:"user_id"`
	ChannelID string         `json:"channel_id"`
	RootID    string         `json:"root_id"`
	Message   string         `json:"message"`
	Type      string         `json:"type"`
	Props     map[string]any `json:"props"`
	FileIDs   []string       `json:"file_ids"`
	Metadata  struct {
		Files []fileInfo `json:"files"`
	} `json:"metadata"`
}

type fileInfo struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	MIMEType string `json:"mime_type"`
	Size     int64  `json:"size"`
}

// handle decodes one "posted" event and delivers it if it is for the bot.
func (c *Channel) handle(ctx context.Context, in channels.Inbox, data []byte) {
	var d postedData
	if err := json.Unmarshal(data, &d); err != nil {
		c.log.Warn("mattermost: malformed posted event skipped", "err", err)
		return
	}
	var p post
	if err := json.Unmarshal([]byte(d.Post), &p); err != nil {
		c.log.Warn("mattermost: posted event with a malformed post skipped", "err", err)
		return
	}
	m, files, ok := c.toInbound(d, p)
	if !ok {
		return
	}
	if len(files) > 0 {
		c.download(ctx, in, &m, files)
	}
	// The websocket has no acknowledgement, and the resume point has moved
	// past this post (the server replays only what the socket missed): a
	// post the gateway did not take is lost, and reported so.
	if err := channels.DeliverRetrying(ctx, in, m, c.log, c.backoffMin, c.backoffMax); err != nil && !errors.Is(err, channels.ErrDenied) {
		channels.ReportLost(in, m, err, c.log)
	}
}

// toInbound converts a post. It reports false for posts the bot should not
// answer: its own, other bots', system messages, posts outside the group
// policy, and malformed ones (logged).
func (c *Channel) toInbound(d postedData, p post) (bus.Inbound, []fileInfo, bool) {
	if p.ID == "" || p.ChannelID == "" || p.UserID == "" {
		c.log.Warn("mattermost: post without id, channel or author skipped", "post_id", p.ID, "channel_id", p.ChannelID)
		return bus.Inbound{}, nil, false
	}
	me := c.self()
	if p.UserID == me.ID || p.Type != "" || fromBot(p.Props) {
		return bus.Inbound{}, nil, false
	}
	isGroup := d.ChannelType != "D"
	text, addressed := stripMention(p.Message, me.Username)
	if !addressed && c.inThread(p.RootID) {
		addressed = true // a reply in a thread the bot answered in
	}
	if !addressed && d.Mentions != "" {
		var ids []string
		if json.Unmarshal([]byte(d.Mentions), &ids) == nil && slices.Contains(ids, me.ID) {
			addressed = true
		}
	}
	if !c.cfg.GroupPolicy.Admits(isGroup, addressed, p.ChannelID, c.cfg.GroupAllowFrom) {
		c.log.Debug("mattermost: channel post not for the bot skipped", "channel_id", p.ChannelID)
		return bus.Inbound{}, nil, false
	}
	username := strings.TrimPrefix(d.SenderName, "@")
	sender := p.UserID
	if username != "" {
		sender += "|" + username
	}
	meta := bus.Metadata{"post_id": p.ID, "user_id": p.UserID, "channel_type": d.ChannelType}
	if username != "" {
		meta["username"] = username
	}
	if d.TeamID != "" {
		meta["team_id"] = d.TeamID
	}
	root := p.RootID
	if root == "" && isGroup && c.cfg.ReplyInThread {
		root = p.ID // the answer starts a thread under the post
	}
	sessionKey := ""
	if root != "" {
		meta["root_id"] = root
		sessionKey = bus.SessionKeyOf(c.Name(), p.ChannelID, root)
	}
	files := p.Metadata.Files
	if len(files) == 0 {
		for _, id := range p.FileIDs {
			files = append(files, fileInfo{ID: id})
		}
	}
	var notes []string
	var take []fileInfo
	for _, f := range files {
		if f.Size > c.cfg.MaxMediaBytes {
			notes = append(notes, media.TooLarge("attachment "+f.Name, f.Size, c.cfg.MaxMediaBytes))
			continue
		}
		take = append(take, f)
	}
	content := strings.TrimSpace(strings.Join(append([]string{strings.TrimSpace(text)}, notes...), "\n"))
	if content == "" && len(take) == 0 {
		return bus.Inbound{}, nil, false
	}
	return bus.Inbound{
		Channel:    c.Name(),
		SenderID:   sender,
		ChatID:     p.ChannelID,
		MessageID:  p.ID,
		Content:    content,
		IsGroup:    isGroup,
		SessionKey: sessionKey,
		Metadata:   meta,
		ReceivedAt: time.Now(),
	}, take, true
}

// download fetches the post's files into the media folder (not for senders
// the gate would refuse); failures become notes in the text.
func (c *Channel) download(ctx context.Context, in channels.Inbox, m *bus.Inbound, files []fileInfo) {
	items := make([]media.Item, 0, len(files))
	for _, f := range files {
		items = append(items, media.Item{Name: f.Name, MIMEType: f.MIMEType, Fetch: func(ctx context.Context) ([]byte, error) {
			h := http.Header{"Authorization": {"Bearer " + c.cfg.Token}}
			return media.Fetch(ctx, c.http, c.cfg.URL+"/api/v4/files/"+f.ID, h, c.cfg.MaxMediaBytes)
		}})
	}
	col := media.Collector{Dir: c.mediaDir, Max: c.cfg.MaxMediaBytes, Platform: "mattermost", Log: c.log, Redact: c.redact.String}
	col.Collect(ctx, m, channels.Admits(in, c.Name(), m.SenderID), items)
}

func fromBot(props map[string]any) bool {
	switch v := props["from_bot"].(type) {
	case bool:
		return v
	case string:
		return v == "true"
	}
	return false
}

// stripMention removes a leading "@bot" (with a following ':' or ',') and
// reports whether the text mentions the bot anywhere.
func stripMention(text, username string) (string, bool) {
	if username == "" {
		return text, false
	}
	re := regexp.MustCompile(`(?i)(^|[^\w.-])@` + regexp.QuoteMeta(username) + `($|[^\w-]|\.($|\s))`)
	if !re.MatchString(text) {
		return text, false
	}
	trimmed := strings.TrimSpace(text)
	lead := "@" + strings.ToLower(username)
	if len(trimmed) >= len(lead) && strings.ToLower(trimmed[:len(lead)]) == lead {
		rest := strings.TrimLeft(trimmed[len(lead):], ":,")
		return strings.TrimSpace(rest), true
	}
	return text, true
}
