package discord

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// Slash commands. Discord gives an interaction three seconds for its first
// response and its token fifteen minutes for the rest. The adapter
// answers at once with a deferred response ("nanobot is thinking…", seen
// by everyone in the channel, like the answer to a typed command), then
// delivers the command as the text it stands for. The agent's answer
// completes the deferred response; what follows goes as follow-up
// messages, and when the token no longer works, as plain messages in the
// channel. The token is kept in memory only: it never reaches the journal,
// the outbox or a log.

// ackTimeout bounds the deferred response; Discord refuses it later.
const ackTimeout = 3 * time.Second

// interactionTTL is how long an interaction's token is used to answer:
// Discord's fifteen minutes, less a margin.
const interactionTTL = 14 * time.Minute

// metaInteraction is the Metadata key naming the interaction a message
// came from; the answers carry it back.
const metaInteraction = "interaction_id"

// interaction is a slash command waiting for, or being given, its answer.
type interaction struct {
	appID, token string
	expires      time.Time
	// answered is set once the deferred response was completed (the
	// answer's first part) or withdrawn; later parts are follow-ups.
	answered bool
	// original is the id of the response message once completed.
	original string
}

// ref is the discordgo value the webhook calls take.
func (p *interaction) ref() *discordgo.Interaction {
	return &discordgo.Interaction{AppID: p.appID, Token: p.token}
}

// onCommand answers an interaction in discordgo's reader before the
// event is queued, so Discord's three seconds hold however long the queue
// is: a button press gets a deferred update; an application command a
// deferred response or, in a channel the bot does not serve
// (allowChannels, an allowlist group policy), a refusal only the asker
// sees. It reports whether the interaction is to be delivered.
func (c *Channel) onCommand(e *discordgo.Event) bool {
	var i discordgo.Interaction
	if err := json.Unmarshal(e.RawData, &i); err != nil {
		return true // the worker logs it
	}
	if i.Type == discordgo.InteractionMessageComponent {
		ctx, cancel := context.WithTimeout(context.Background(), ackTimeout)
		defer cancel()
		err := c.s.InteractionRespond(&i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}, discordgo.WithContext(ctx))
		if err != nil {
			c.log.Debug("discord: answering a button press failed", "err", c.redact.Error(err))
		}
		return true
	}
	if i.Type != discordgo.InteractionApplicationCommand {
		return true // the worker skips it
	}
	if i.ID == "" || i.Token == "" || i.ChannelID == "" || interactionUser(&i) == nil {
		c.log.Warn("discord: slash command without id, token, channel or user skipped", "interaction_id", i.ID)
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), ackTimeout)
	defer cancel()
	if !c.serves(i.GuildID, i.ChannelID) {
		err := c.s.InteractionRespond(&i, &discordgo.InteractionResponse{
			Type: discordgo.InteractionResponseChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Content: "I don't take commands in this channel.", Flags: discordgo.MessageFlagsEphemeral},
		}, discordgo.WithContext(ctx))
		if err != nil {
			c.log.Debug("discord: refusing a slash command failed", "err", c.redact.Error(err))
		}
		return false
	}
	err := c.s.InteractionRespond(&i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}, discordgo.WithContext(ctx))
	if err != nil {
		// The command still runs; its answer goes to the channel.
		c.log.Warn("discord: acknowledging a slash command failed; the answer goes to the channel", "interaction_id", i.ID, "err", c.redact.Error(err))
		return true
	}
	appID := i.AppID
	if appID == "" {
		appID = c.appID()
	}
	now := time.Now()
	c.mu.Lock()
	for id, p := range c.interactions {
		if now.After(p.expires) {
			delete(c.interactions, id)
		}
	}
	c.interactions[i.ID] = &interaction{appID: appID, token: i.Token, expires: now.Add(interactionTTL)}
	c.mu.Unlock()
	return true
}

// serves reports whether the bot answers in the channel: any direct
// message; in a guild, a channel allowChannels and the group policy let in
// (a slash command is addressed to the bot by its nature).
func (c *Channel) serves(guild, channel string) bool {
	if guild == "" {
		return true
	}
	if len(c.allow) > 0 && !c.allow[channel] {
		return false
	}
	return c.cfg.GroupPolicy.Admits(true, true, channel, c.cfg.GroupAllowFrom)
}

func interactionUser(i *discordgo.Interaction) *discordgo.User {
	if i.Member != nil && i.Member.User != nil {
		return i.Member.User
	}
	return i.User
}

// handleCommand delivers a slash command as the text it stands for, sent
// by whoever used it: the gate and the agent obey or refuse it as typed
// text. A sender the gate refuses sees the deferred response withdrawn
// (in a direct message the gate's pairing answer follows, as for text).
func (c *Channel) handleCommand(ctx context.Context, in channels.Inbox, i *discordgo.Interaction) {
	user := interactionUser(i)
	if user == nil || i.ChannelID == "" {
		return
	}
	meta := bus.Metadata{metaInteraction: i.ID, "user_id": user.ID, "username": user.Username}
	if i.GuildID != "" {
		meta["guild_id"] = i.GuildID
	}
	if user.GlobalName != "" {
		meta["display_name"] = user.GlobalName
	}
	m := bus.Inbound{
		Channel:    c.Name(),
		SenderID:   userID(user),
		ChatID:     i.ChannelID,
		MessageID:  "interaction:" + i.ID,
		Content:    c.commandText(i.ApplicationCommandData()),
		IsGroup:    i.GuildID != "",
		Metadata:   meta,
		ReceivedAt: time.Now(),
	}
	err := channels.DeliverRetrying(ctx, in, m, c.log, c.backoffMin, c.backoffMax)
	switch {
	case err == nil:
		return
	case errors.Is(err, channels.ErrDenied):
		c.withdraw(ctx, i.ID)
	default:
		channels.ReportLost(in, m, err, c.log)
		if ctx.Err() == nil {
			c.answerOnly(ctx, i.ID, "Sorry, I could not take that command; please try again.")
		}
	}
}

// claim returns the interaction id's entry for an answer, and whether the
// answer completes the deferred response (the first part); nil when the
// token is gone (expired, unknown after a restart, or failed before).
func (c *Channel) claim(id string) (p *interaction, first bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p = c.interactions[id]
	if p == nil || time.Now().After(p.expires) {
		delete(c.interactions, id)
		return nil, false
	}
	first = !p.answered
	p.answered = true
	return p, first
}

// drop forgets an interaction whose token stopped working.
func (c *Channel) drop(id string) {
	c.mu.Lock()
	delete(c.interactions, id)
	c.mu.Unlock()
}

// withdraw deletes a deferred response nobody will complete.
func (c *Channel) withdraw(ctx context.Context, id string) {
	p, first := c.claim(id)
	if p == nil || !first {
		return
	}
	if err := c.s.InteractionResponseDelete(p.ref(), discordgo.WithContext(ctx)); err != nil {
		c.log.Debug("discord: withdrawing a deferred response failed", "err", c.redact.Error(err))
	}
	c.drop(id)
}

// answerOnly completes a deferred response with text, if nothing else did.
func (c *Channel) answerOnly(ctx context.Context, id, text string) {
	p, first := c.claim(id)
	if p == nil || !first {
		return
	}
	if _, err := c.s.InteractionResponseEdit(p.ref(), &discordgo.WebhookEdit{Content: &text}, discordgo.WithContext(ctx)); err != nil {
		c.log.Debug("discord: answering a slash command failed", "err", c.redact.Error(err))
	}
}

// sendAnswer sends m as the answer to the interaction it carries: the
// first part completes the deferred response, later ones are follow-ups.
// handled is false when m answers no interaction this process holds a
// token for, or the token failed (the caller then posts in the channel);
// a rate limit is returned for the dispatcher to retry.
func (c *Channel) sendAnswer(ctx context.Context, m bus.Outbound) (ref channels.MessageRef, handled bool, err error) {
	id := m.Metadata[metaInteraction]
	if id == "" {
		return ref, false, nil
	}
	p, first := c.claim(id)
	if p == nil {
		return ref, false, nil
	}
	text := toDiscord(m.Content)
	mentions := &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
	var msg *discordgo.Message
	if first {
		edit := &discordgo.WebhookEdit{Content: &text, AllowedMentions: mentions}
		if comps := components(m.Actions); comps != nil {
			edit.Components = &comps
		}
		msg, err = c.s.InteractionResponseEdit(p.ref(), edit, discordgo.WithContext(ctx))
	} else {
		msg, err = c.s.FollowupMessageCreate(p.ref(), true, &discordgo.WebhookParams{Content: text, AllowedMentions: mentions, Components: components(m.Actions)}, discordgo.WithContext(ctx))
	}
	if err != nil {
		serr := c.sendError("answer slash command "+id, err)
		var ra *channels.RetryAfterError
		if errors.As(serr, &ra) {
			if first {
				c.unclaim(id)
			}
			return ref, true, serr
		}
		c.log.Warn("discord: answering a slash command failed; sending the answer to the channel", "interaction_id", id, "err", serr)
		c.drop(id)
		return ref, false, nil
	}
	if msg == nil || msg.ID == "" {
		return ref, false, nil
	}
	if first {
		c.mu.Lock()
		p.original = msg.ID
		c.mu.Unlock()
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: msg.ID, Extra: map[string]string{metaInteraction: id}}, true, nil
}

// unclaim lets the next attempt complete the deferred response again.
func (c *Channel) unclaim(id string) {
	c.mu.Lock()
	if p := c.interactions[id]; p != nil {
		p.answered = false
	}
	c.mu.Unlock()
}

// editAnswer edits a message sent by sendAnswer through the interaction's
// webhook; handled is false when the token is gone or failed (the caller
// then edits it as a channel message).
func (c *Channel) editAnswer(ctx context.Context, r channels.MessageRef, text string) (handled bool, err error) {
	id := r.Extra[metaInteraction]
	if id == "" {
		return false, nil
	}
	c.mu.Lock()
	p := c.interactions[id]
	var target string
	if p != nil && time.Now().Before(p.expires) {
		target = r.MessageID
		if target == p.original {
			target = "@original"
		}
	}
	c.mu.Unlock()
	if target == "" {
		return false, nil
	}
	_, err = c.s.WebhookMessageEdit(p.appID, p.token, target, &discordgo.WebhookEdit{
		Content: &text, AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}},
	}, discordgo.WithContext(ctx))
	if err != nil {
		serr := c.sendError("edit slash command answer "+r.MessageID, err)
		var ra *channels.RetryAfterError
		if errors.As(serr, &ra) {
			return true, serr
		}
		c.log.Debug("discord: editing a slash command answer failed; editing it as a channel message", "err", serr)
		return false, nil
	}
	return true, nil
}
