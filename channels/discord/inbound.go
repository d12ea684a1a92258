package discord

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

// handle decodes one MESSAGE_CREATE (or an INTERACTION_CREATE: a button
// press, a slash command) itself (discordgo would pass a half decoded
// struct along) and delivers it if it is for the bot.
func (c *Channel) handle(ctx context.Context, in channels.Inbox, e *discordgo.Event) {
	if e.Type == "INTERACTION_CREATE" {
		c.handleInteraction(ctx, in, e)
		return
	}
	var m discordgo.Message
	if err := json.Unmarshal(e.RawData, &m); err != nil {
		c.log.Warn("discord: malformed MESSAGE_CREATE skipped", "err", err, "seq", e.Sequence)
		return
	}
	msg, ok := c.toInbound(&m)
	if !ok {
		return
	}
	if len(msg.Media) > 0 {
		c.download(ctx, in, &msg)
	}
	c.deliver(ctx, in, msg)
}

// download fetches the message's attachments into the media folder, so the
// agent gets local files (images go to the model inline). Files from a
// sender the gate would refuse are not fetched; a failed download leaves a
// note in the text instead of the file.
func (c *Channel) download(ctx context.Context, in channels.Inbox, m *bus.Inbound) {
	items := media.TakeURLs(m, c.files, c.cfg.MaxMediaBytes)
	c.collector().Collect(ctx, m, channels.Admits(in, c.Name(), m.SenderID), items)
}

func (c *Channel) collector() media.Collector {
	return media.Collector{Dir: c.mediaDir, Max: c.cfg.MaxMediaBytes, Platform: "discord", Log: c.log, Redact: c.redact.String}
}

// toInbound converts a message. It reports false for messages the bot
// should not answer: its own and other bots', channels outside
// allowChannels, guild messages not addressed to it under the mention
// policy, and malformed ones (logged).
func (c *Channel) toInbound(m *discordgo.Message) (bus.Inbound, bool) {
	if m.ID == "" || m.ChannelID == "" || m.Author == nil || m.Author.ID == "" {
		c.log.Warn("discord: message without id, channel or author skipped", "message_id", m.ID, "channel_id", m.ChannelID)
		return bus.Inbound{}, false
	}
	me := c.self()
	if m.Author.Bot || (me != nil && m.Author.ID == me.ID) {
		return bus.Inbound{}, false
	}
	isGroup := m.GuildID != ""
	if isGroup && len(c.allow) > 0 && !c.allow[m.ChannelID] {
		c.log.Debug("discord: message in a channel not in allowChannels skipped", "channel_id", m.ChannelID)
		return bus.Inbound{}, false
	}
	text, addressed := stripMention(m.Content, me)
	if me != nil {
		for _, u := range m.Mentions {
			if u != nil && u.ID == me.ID {
				addressed = true
			}
		}
		if r := m.ReferencedMessage; r != nil && r.Author != nil && r.Author.ID == me.ID {
			addressed = true
		}
	}
	if !c.cfg.GroupPolicy.Admits(isGroup, addressed, m.ChannelID, c.cfg.GroupAllowFrom) {
		c.log.Debug("discord: guild message not for the bot skipped", "channel_id", m.ChannelID)
		return bus.Inbound{}, false
	}
	meta := bus.Metadata{
		"message_id": m.ID,
		"user_id":    m.Author.ID,
		"username":   m.Author.Username,
	}
	if m.GuildID != "" {
		meta["guild_id"] = m.GuildID
	}
	if m.Author.GlobalName != "" {
		meta["display_name"] = m.Author.GlobalName
	}
	parts := []string{}
	if t := strings.TrimSpace(text); t != "" {
		parts = append(parts, t)
	}
	var files []bus.Media
	for _, a := range m.Attachments {
		if a == nil || a.URL == "" {
			continue
		}
		if int64(a.Size) > c.cfg.MaxMediaBytes {
			parts = append(parts, media.TooLarge("attachment "+a.Filename, int64(a.Size), c.cfg.MaxMediaBytes))
			continue
		}
		files = append(files, bus.Media{URL: a.URL, MIMEType: a.ContentType, Name: a.Filename, Size: int64(a.Size)})
	}
	content := strings.Join(parts, "\n")
	if content == "" && len(files) == 0 {
		return bus.Inbound{}, false
	}
	return bus.Inbound{
		Channel:    c.Name(),
		SenderID:   userID(m.Author),
		ChatID:     m.ChannelID, // a thread's own id for thread messages: its own session
		MessageID:  m.ID,
		Content:    content,
		Media:      files,
		IsGroup:    isGroup,
		Metadata:   meta,
		ReceivedAt: time.Now(),
	}, true
}

// userID is "id|username", so allowFrom may list either.
func userID(u *discordgo.User) string {
	if u.Username == "" {
		return u.ID
	}
	return u.ID + "|" + u.Username
}

// stripMention removes a leading <@bot> or <@!bot> and reports whether the
// text mentions the bot anywhere.
func stripMention(text string, me *discordgo.User) (string, bool) {
	if me == nil || me.ID == "" {
		return text, false
	}
	forms := []string{"<@" + me.ID + ">", "<@!" + me.ID + ">"}
	trimmed := strings.TrimSpace(text)
	for _, f := range forms {
		if strings.HasPrefix(trimmed, f) {
			return strings.TrimSpace(trimmed[len(f):]), true
		}
	}
	for _, f := range forms {
		if strings.Contains(text, f) {
			return text, true
		}
	}
	return text, false
}
