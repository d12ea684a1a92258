package slack

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// Slash commands. Slack apps declare their slash commands in the app's
// manifest, not at run time, so the adapter takes one, "/nanobot" by
// default, whose text is the chat command ("/nanobot model gpt" is
// "/model gpt"; "/nanobot" alone is "/help"; text that names no command is
// a question for the agent), and any other one the manifest declares as
// the chat command of its own name ("/new"). In Socket Mode a slash
// command comes as a slash_commands envelope, acknowledged at once with an
// empty payload (Slack gives three seconds and shows nothing for it), then
// delivered as the text command typed in the same conversation would be.
// The answer is posted in the conversation like any reply; where the bot
// cannot post (a channel it is not in, a direct message between two other
// people) it goes to the command's response_url, seen by the asker only.

// responseTTL and responseUses are Slack's limits on a response_url.
const (
	responseTTL  = 30 * time.Minute
	responseUses = 5
)

// metaSlash is the Metadata key naming the slash command (its trigger
// id) a message came from; the answers carry it back.
const metaSlash = "slash_trigger"

// response is a slash command's response_url, kept in memory only (it
// lets anyone who has it post to the conversation for half an hour).
type response struct {
	url     string
	expires time.Time
	left    int
}

// handleSlash acknowledges a slash command, then delivers it. A command in
// a channel the bot does not serve (groupPolicy allowlist) is refused in
// the acknowledgement, to the asker only.
func (c *Channel) handleSlash(ctx context.Context, sm *socketmode.Client, in channels.Inbox, ev socketmode.Event) {
	cmd, ok := ev.Data.(slack.SlashCommand)
	isDM := strings.HasPrefix(cmd.ChannelID, "D") || cmd.ChannelName == "directmessage"
	var reply any
	serve := ok && cmd.UserID != "" && cmd.ChannelID != "" && cmd.TriggerID != ""
	if serve && !c.cfg.GroupPolicy.Admits(!isDM, true, cmd.ChannelID, c.cfg.AllowChannels) {
		reply, serve = map[string]string{"text": "I don't take commands in this channel."}, false
	}
	if ev.Request != nil {
		if err := sm.AckCtx(ctx, ev.Request.EnvelopeID, reply); err != nil && ctx.Err() == nil {
			c.log.Warn("slack: acknowledging a slash command failed", "err", err)
		}
	}
	if !serve {
		if !ok || reply == nil {
			c.log.Warn("slack: slash command without a user, channel or trigger skipped")
		}
		return
	}
	m := bus.Inbound{
		Channel:    c.Name(),
		SenderID:   cmd.UserID,
		ChatID:     cmd.ChannelID,
		Content:    c.slashText(cmd.Command, fromMrkdwn(strings.TrimSpace(cmd.Text))),
		MessageID:  "slash:" + cmd.TriggerID,
		IsGroup:    !isDM,
		Metadata:   bus.Metadata{"user_id": cmd.UserID, metaSlash: cmd.TriggerID},
		ReceivedAt: time.Now(),
	}
	if c.seen.Seen(m.ChatID + "/" + m.MessageID) {
		return
	}
	c.keepResponse(cmd.TriggerID, cmd.ResponseURL)
	// Slack does not send a slash command again: retry while there is
	// hope, then say it did not go through.
	err := channels.DeliverRetrying(ctx, in, m, c.log, c.backoffMin, c.backoffMax)
	if err != nil && !errors.Is(err, channels.ErrDenied) {
		channels.ReportLost(in, m, err, c.log)
		if ctx.Err() == nil {
			c.respond(ctx, cmd.TriggerID, "Sorry, I could not take that command; please try again.")
		}
	}
}

// slashText is the chat command a slash command stands for: for the
// configured one, its text (with a slash when it names a command, as
// itself when it is a question; "/help" when empty), for any other, its
// own name and text.
func (c *Channel) slashText(command, text string) string {
	command = strings.ToLower(command)
	if command != c.cfg.SlashCommand {
		return strings.TrimSpace(command + " " + text)
	}
	word, _, _ := strings.Cut(strings.TrimPrefix(text, "/"), " ")
	switch {
	case text == "":
		return "/help"
	case strings.HasPrefix(text, "/"):
		return text
	case c.isCommand(strings.ToLower(word)):
		return "/" + text
	}
	return text
}

func (c *Channel) isCommand(name string) bool {
	if name == "help" || name == "stop" || name == "new" {
		return true // also without a command table
	}
	for _, cmd := range c.commands {
		if cmd.Name == name {
			return true
		}
	}
	return false
}

// keepResponse remembers a slash command's response_url; one that is not
// Slack's (or, in tests, the API's host) is not kept, so a forged payload
// cannot make the adapter post elsewhere.
func (c *Channel) keepResponse(trigger, raw string) {
	u, err := url.Parse(raw)
	if err != nil || raw == "" || !(u.Scheme == "https" && (u.Host == "slack.com" || strings.HasSuffix(u.Host, ".slack.com")) || u.Host == c.fileHost) {
		return
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, r := range c.responses {
		if now.After(r.expires) {
			delete(c.responses, k)
		}
	}
	c.responses[trigger] = &response{url: raw, expires: now.Add(responseTTL), left: responseUses}
}

// takeResponse returns the response_url of trigger for one use, or "".
func (c *Channel) takeResponse(trigger string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.responses[trigger]
	if r == nil || r.left == 0 || time.Now().After(r.expires) {
		delete(c.responses, trigger)
		return ""
	}
	r.left--
	return r.url
}

// respond posts text to the slash command's response_url, seen by the
// asker only. It reports whether Slack took it.
func (c *Channel) respond(ctx context.Context, trigger, text string) bool {
	u := c.takeResponse(trigger)
	if u == "" {
		return false
	}
	err := slack.PostWebhookCustomHTTPContext(ctx, u, c.http, &slack.WebhookMessage{Text: text, ResponseType: slack.ResponseTypeEphemeral})
	if err != nil {
		c.log.Warn("slack: answering through a slash command's response_url failed", "err", c.redact.Error(err))
		return false
	}
	return true
}

// notMember are the chat.postMessage errors of a conversation the bot
// cannot post in, where a slash command's answer goes to its response_url.
var notMember = map[string]bool{"not_in_channel": true, "channel_not_found": true}

// answerPrivately sends m to the response_url of the slash command it
// answers, when err says the bot cannot post in the conversation. It
// reports whether it did.
func (c *Channel) answerPrivately(ctx context.Context, m bus.Outbound, err error) bool {
	var ser slack.SlackErrorResponse
	trigger := m.Metadata[metaSlash]
	if trigger == "" || !errors.As(err, &ser) || !notMember[ser.Err] {
		return false
	}
	return c.respond(ctx, trigger, toMrkdwn(m.Content))
}
