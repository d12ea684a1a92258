package slack

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// sectionLimit is Block Kit's limit on a section's text.
const sectionLimit = 3000

// actionBlocks are a message's blocks when it offers actions: its text as
// a section (blocks replace the text on screen; the text stays the
// notification's) and one button per action, whose value is the command
// pressing it sends. Nil without actions.
func actionBlocks(text string, actions []bus.Action) []slack.Block {
	var buttons []slack.BlockElement
	for i, a := range actions {
		if a.Label == "" || a.Command == "" || len(a.Command) > 2000 {
			continue
		}
		b := slack.NewButtonBlockElement("nanobot_action_"+strconv.Itoa(i), a.Command, slack.NewTextBlockObject(slack.PlainTextType, a.Label, false, false))
		if strings.HasPrefix(a.Command, "/deny") {
			b.Style = slack.StyleDanger
		}
		buttons = append(buttons, b)
	}
	if len(buttons) == 0 {
		return nil
	}
	if r := []rune(text); len(r) > sectionLimit {
		text = string(r[:sectionLimit-1]) + "…"
	}
	return []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil),
		slack.NewActionBlock("nanobot_actions", buttons...),
	}
}

// handleInteraction turns a press on one of our buttons into the command
// it carries, sent by whoever pressed it in the channel the message is in:
// the gate and the agent treat it as if they had typed it (an approval
// answer counts only from an admin). Other interactions are skipped. It
// reports whether the envelope may be acknowledged.
func (c *Channel) handleInteraction(ctx context.Context, in channels.Inbox, cb slack.InteractionCallback) bool {
	if cb.Type != slack.InteractionTypeBlockActions || cb.User.ID == "" || cb.Channel.ID == "" {
		return true
	}
	for _, a := range cb.ActionCallback.BlockActions {
		if !strings.HasPrefix(a.ActionID, "nanobot_action_") || !strings.HasPrefix(a.Value, "/") {
			continue
		}
		m := bus.Inbound{
			Channel:    c.Name(),
			SenderID:   cb.User.ID,
			ChatID:     cb.Channel.ID,
			Content:    a.Value,
			MessageID:  "action:" + cb.User.ID + ":" + a.ActionTs,
			IsGroup:    !strings.HasPrefix(cb.Channel.ID, "D"),
			Metadata:   bus.Metadata{"user_id": cb.User.ID, "action_ts": a.ActionTs},
			ReceivedAt: time.Now(),
		}
		if c.seen.Seen(m.ChatID + "/" + m.MessageID) {
			continue
		}
		err := channels.DeliverRetrying(ctx, in, m, c.log, c.backoffMin, c.backoffMax)
		if err != nil && !errors.Is(err, channels.ErrDenied) {
			c.seen.Forget(m.ChatID + "/" + m.MessageID)
			return false
		}
	}
	return true
}
