package slack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// Send implements channels.Channel: one message (the dispatcher already
// split it to MessageLimit) as mrkdwn, in the message's thread
// (m.ThreadID) when replyInThread is on. A final answer marks
// the user's message ✅. The answer to a slash command in a conversation
// the bot cannot post in goes to the command's response_url (slash.go).
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	if err := channels.CheckSend("slack", m); err != nil {
		return channels.MessageRef{}, err
	}
	opts := []slack.MsgOption{slack.MsgOptionText(toMrkdwn(m.Content), false)}
	if blocks := actionBlocks(toMrkdwn(m.Content), m.Actions); blocks != nil {
		opts = append(opts, slack.MsgOptionBlocks(blocks...))
	}
	thread := ""
	if c.cfg.threads() {
		thread = replyThread(m)
	}
	if thread != "" {
		opts = append(opts, slack.MsgOptionTS(thread))
	}
	_, ts, err := c.api.PostMessageContext(ctx, m.ChatID, opts...)
	if err != nil {
		if c.answerPrivately(ctx, m, err) {
			return channels.MessageRef{ChatID: m.ChatID}, nil
		}
		return channels.MessageRef{}, c.sendError("chat.postMessage to "+m.ChatID, err)
	}
	c.finished(ctx, m)
	ref := channels.MessageRef{ChatID: m.ChatID, MessageID: ts}
	if thread != "" {
		ref.Extra = map[string]string{"thread_ts": thread}
	}
	return ref, nil
}

// Edit implements channels.Editor (streaming): chat.update with the full
// text so far.
func (c *Channel) Edit(ctx context.Context, r channels.MessageRef, m bus.Outbound) error {
	if r.MessageID == "" {
		return channels.Permanentf("slack: edit: no message ts")
	}
	if strings.TrimSpace(m.Content) == "" {
		return nil
	}
	_, _, _, err := c.api.UpdateMessageContext(ctx, r.ChatID, r.MessageID, slack.MsgOptionText(toMrkdwn(m.Content), false))
	if err != nil {
		return c.sendError(fmt.Sprintf("chat.update of %s in %s", r.MessageID, r.ChatID), err)
	}
	c.finished(ctx, m)
	return nil
}

// SendMedia implements channels.MediaSender: the text first (as Send), then
// each file uploaded into the same conversation and thread
// (files.getUploadURLExternal, upload, files.completeUploadExternal). Media
// with only a URL are sent as a link. It returns the text's message, or
// a reference without a message id when there was no text.
func (c *Channel) SendMedia(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	var parts channels.Parts
	if strings.TrimSpace(m.Content) != "" {
		text := m
		text.Media, text.Final = nil, false
		r, err := c.Send(ctx, text)
		if err != nil {
			return parts.Fail(err)
		}
		parts.Sent(r)
	}
	thread := ""
	if c.cfg.threads() {
		thread = replyThread(m)
	}
	for _, media := range m.Media {
		if err := c.upload(ctx, m.ChatID, thread, media); err != nil {
			return parts.Fail(err)
		}
		parts.Sent(channels.MessageRef{ChatID: m.ChatID})
	}
	c.finished(ctx, m)
	return parts.First(), nil
}

func (c *Channel) upload(ctx context.Context, chat, thread string, media bus.Media) error {
	if media.Path == "" {
		if media.URL == "" {
			return channels.Permanentf("slack: send file: media has neither a path nor a URL")
		}
		opts := []slack.MsgOption{slack.MsgOptionText("<"+escape(media.URL)+"|"+escape(cmpOr(media.Name, media.URL))+">", false)}
		if thread != "" {
			opts = append(opts, slack.MsgOptionTS(thread))
		}
		if _, _, err := c.api.PostMessageContext(ctx, chat, opts...); err != nil {
			return c.sendError("chat.postMessage (file link) to "+chat, err)
		}
		return nil
	}
	f, err := os.Open(media.Path)
	if err != nil {
		return channels.Permanentf("slack: send file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return channels.Permanentf("slack: send file %s: empty or unreadable", media.Path)
	}
	name := cmpOr(media.Name, filepath.Base(media.Path))
	_, err = c.api.UploadFileContext(ctx, slack.UploadFileParameters{
		Reader: f, FileSize: int(st.Size()), Filename: name, Title: name,
		Channel: chat, ThreadTimestamp: thread,
	})
	if err != nil {
		return c.sendError("upload "+name+" to "+chat, err)
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// React adds a reaction (👀 on receipt, ✅ when answered); emoji is a Slack emoji name ("eyes").
func (c *Channel) React(ctx context.Context, chatID, messageID, emoji string) error {
	err := c.api.AddReactionContext(ctx, strings.Trim(emoji, ":"), slack.ItemRef{Channel: chatID, Timestamp: messageID})
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && se.Err == "already_reacted" {
		return nil
	}
	if err != nil {
		return c.sendError("reactions.add in "+chatID, err)
	}
	return nil
}

// finished adds ✅ to the user's message once the final answer to it is
// out (once per message).
func (c *Channel) finished(ctx context.Context, m bus.Outbound) {
	if !m.Final || !c.cfg.reactions() {
		return
	}
	ts := m.ReplyTo
	if ts == "" {
		ts = metaString(m.Metadata, "ts")
	}
	if ts == "" || strings.Contains(ts, ":") {
		return // not a message: a slash command, a button press
	}
	key := m.ChatID + "/" + ts
	c.mu.Lock()
	already := c.done[key]
	if !already {
		if len(c.done) > 1024 {
			clear(c.done)
		}
		c.done[key] = true
	}
	c.mu.Unlock()
	if already {
		return
	}
	if err := c.React(ctx, m.ChatID, ts, "white_check_mark"); err != nil && ctx.Err() == nil {
		c.log.Debug("slack: ✅ reaction failed", "err", err)
	}
}

func metaString(meta bus.Metadata, key string) string { return meta[key] }

// permanent are Web API errors retrying cannot fix.
var permanent = map[string]bool{
	"channel_not_found": true, "not_in_channel": true, "is_archived": true,
	"msg_too_long": true, "no_text": true, "invalid_auth": true, "not_authed": true,
	"account_inactive": true, "token_revoked": true, "missing_scope": true,
	"message_not_found": true, "cant_update_message": true, "restricted_action": true,
}

// sendError classifies a Web API error for the dispatcher: ratelimited
// carries Retry-After, the errors in permanent are permanent, anything
// else (network, 5xx) is retried.
func (c *Channel) sendError(what string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("slack: %s: %w", what, err)
	}
	wrapped := fmt.Errorf("slack: %s: %s", what, c.redact.Error(err))
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return &channels.RetryAfterError{After: max(rl.RetryAfter, time.Second), Err: wrapped}
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && permanent[se.Err] {
		return &channels.PermanentError{Err: wrapped}
	}
	return wrapped
}

// replyThread is the thread m answers in: its ThreadID, or for a reply
// written before outbound messages carried one, its metadata.
func replyThread(m bus.Outbound) string {
	if m.ThreadID != "" {
		return m.ThreadID
	}
	return metaString(m.Metadata, "thread_ts")
}
