package discord

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// maxCustomID is Discord's limit on a button's custom_id.
const maxCustomID = 100

// components is one action row of buttons for a message's actions, whose
// custom_id is the command pressing it sends; nil without actions.
func components(actions []bus.Action) []discordgo.MessageComponent {
	var row []discordgo.MessageComponent
	for _, a := range actions {
		if a.Label == "" || a.Command == "" || len(a.Command) > maxCustomID || len(row) == 5 {
			continue
		}
		style := discordgo.SecondaryButton
		switch {
		case strings.HasPrefix(a.Command, "/deny"):
			style = discordgo.DangerButton
		case len(row) == 0:
			style = discordgo.PrimaryButton
		}
		row = append(row, discordgo.Button{Label: a.Label, Style: style, CustomID: a.Command})
	}
	if len(row) == 0 {
		return nil
	}
	return []discordgo.MessageComponent{discordgo.ActionsRow{Components: row}}
}

// handleInteraction hands a slash command to handleCommand; a press on
// one of our buttons (answered on arrival by onCommand, so the client
// stops waiting) delivers the command it carries, sent by whoever pressed
// it: the gate and the agent treat it as if they had typed it (an
// approval answer counts only from an admin).
func (c *Channel) handleInteraction(ctx context.Context, in channels.Inbox, e *discordgo.Event) {
	var i discordgo.Interaction
	if err := json.Unmarshal(e.RawData, &i); err != nil {
		c.log.Warn("discord: malformed INTERACTION_CREATE skipped", "err", err)
		return
	}
	if i.Type == discordgo.InteractionApplicationCommand {
		c.handleCommand(ctx, in, &i)
		return
	}
	if i.Type != discordgo.InteractionMessageComponent {
		return
	}
	user := i.User
	if i.Member != nil && i.Member.User != nil {
		user = i.Member.User
	}
	data := i.MessageComponentData()
	if user == nil || i.ChannelID == "" || !strings.HasPrefix(data.CustomID, "/") {
		return
	}
	c.deliver(ctx, in, bus.Inbound{
		Channel:    c.Name(),
		SenderID:   userID(user),
		ChatID:     i.ChannelID,
		Content:    data.CustomID,
		MessageID:  "interaction:" + i.ID,
		IsGroup:    i.GuildID != "",
		Metadata:   bus.Metadata{"user_id": user.ID},
		ReceivedAt: time.Now(),
	})
}
