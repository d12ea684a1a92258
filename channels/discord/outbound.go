package discord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

// Send implements channels.Channel: one message (the dispatcher already
// split it to MessageLimit), replying to the user's message when
// replyToMessage is on. The answer to a slash command completes its
// interaction instead, while its token works (slash.go). Mentions in the
// text do not ping anyone.
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	if err := channels.CheckSend("discord", m); err != nil {
		return channels.MessageRef{}, err
	}
	if ref, handled, err := c.sendAnswer(ctx, m); handled {
		return ref, err
	}
	data := &discordgo.MessageSend{
		Content:         toDiscord(m.Content),
		AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}},
		Components:      components(m.Actions),
	}
	if c.cfg.ReplyToMessage && m.ReplyTo != "" {
		no := false
		data.Reference = &discordgo.MessageReference{MessageID: m.ReplyTo, ChannelID: m.ChatID, FailIfNotExists: &no}
	}
	msg, err := c.s.ChannelMessageSendComplex(m.ChatID, data, discordgo.WithContext(ctx))
	if err != nil {
		return channels.MessageRef{}, c.sendError("send to channel "+m.ChatID, err)
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: msg.ID}, nil
}

// maxFiles is how many files Discord takes in one message.
const maxFiles = 10

// SendMedia implements channels.MediaSender: the text with the files
// attached (up to ten per message; more go in follow-up messages), in the
// channel also when they answer a slash command (whose deferred response
// is withdrawn if nothing completed it). Media with only a URL are linked
// in the text. It returns the first message.
func (c *Channel) SendMedia(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	if m.ChatID == "" {
		return channels.MessageRef{}, channels.Permanentf("discord: send: empty chat id")
	}
	text, local, err := media.Split(m)
	if err != nil {
		return channels.MessageRef{}, channels.Permanentf("discord: send file: %w", err)
	}
	var files []*discordgo.File
	defer func() {
		for _, f := range files {
			f.Reader.(io.Closer).Close()
		}
	}()
	for _, md := range local {
		f, err := os.Open(md.Path)
		if err != nil {
			return channels.MessageRef{}, channels.Permanentf("discord: send file: %w", err)
		}
		st, err := f.Stat()
		if err != nil || st.IsDir() || st.Size() > c.cfg.MaxMediaBytes {
			f.Close()
			return channels.MessageRef{}, channels.Permanentf("discord: send file %s: not a readable file of at most %s", md.Path, media.Size(c.cfg.MaxMediaBytes))
		}
		name := md.Name
		if name == "" {
			name = filepath.Base(md.Path)
		}
		files = append(files, &discordgo.File{Name: name, ContentType: md.MIMEType, Reader: f})
	}
	var parts channels.Parts
	for i := 0; i == 0 || i < len(files); i += maxFiles {
		data := &discordgo.MessageSend{
			Files:           files[i:min(i+maxFiles, len(files))],
			AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}},
		}
		if i == 0 {
			data.Content = toDiscord(text)
			if c.cfg.ReplyToMessage && m.ReplyTo != "" {
				no := false
				data.Reference = &discordgo.MessageReference{MessageID: m.ReplyTo, ChannelID: m.ChatID, FailIfNotExists: &no}
			}
		}
		if data.Content == "" && len(data.Files) == 0 {
			return channels.MessageRef{}, channels.Permanentf("discord: send to channel %s: empty message", m.ChatID)
		}
		msg, err := c.s.ChannelMessageSendComplex(m.ChatID, data, discordgo.WithContext(ctx))
		if err != nil {
			return parts.Fail(c.sendError("send files to channel "+m.ChatID, err))
		}
		parts.Sent(channels.MessageRef{ChatID: m.ChatID, MessageID: msg.ID})
	}
	// Files go to the channel; a slash command they answer stops
	// "thinking".
	if id := m.Metadata[metaInteraction]; id != "" {
		c.withdraw(ctx, id)
	}
	return parts.First(), nil
}

// Edit implements channels.Editor (streaming): the message shows m.Content.
func (c *Channel) Edit(ctx context.Context, r channels.MessageRef, m bus.Outbound) error {
	if strings.TrimSpace(m.Content) == "" {
		return nil
	}
	text := toDiscord(m.Content)
	if handled, err := c.editAnswer(ctx, r, text); handled {
		return err
	}
	_, err := c.s.ChannelMessageEditComplex(&discordgo.MessageEdit{
		ID: r.MessageID, Channel: r.ChatID, Content: &text,
		AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}},
	}, discordgo.WithContext(ctx))
	if err != nil {
		return c.sendError(fmt.Sprintf("edit message %s in channel %s", r.MessageID, r.ChatID), err)
	}
	return nil
}

// Typing implements channels.Typer: "typing…" for about ten seconds.
func (c *Channel) Typing(ctx context.Context, chatID string, _ bus.Metadata) error {
	if err := c.s.ChannelTyping(chatID, discordgo.WithContext(ctx)); err != nil {
		return c.sendError("typing in channel "+chatID, err)
	}
	return nil
}

// sendError maps a REST failure: 429 to RetryAfterError, 400/403/404 (bad
// message, no permission, channel gone) to PermanentError.
func (c *Channel) sendError(what string, err error) error {
	wrapped := fmt.Errorf("discord: %s: %s", what, c.redact.Error(err))
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) && rl.RateLimit != nil && rl.TooManyRequests != nil {
		return &channels.RetryAfterError{After: rl.RetryAfter, Err: wrapped}
	}
	var rest *discordgo.RESTError
	if errors.As(err, &rest) && rest.Response != nil {
		switch rest.Response.StatusCode {
		case http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusUnauthorized:
			return &channels.PermanentError{Err: wrapped}
		}
	}
	return wrapped
}
