package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

// handle delivers one message event if it is for the bot, then marks it
// read.
func (c *Channel) handle(ctx context.Context, cli client, in channels.Inbox, e *events.Message) {
	m, ok := c.toInbound(ctx, cli, in, e)
	if !ok {
		return
	}
	if err := channels.DeliverRetrying(ctx, in, m, c.log, c.backoffMin, c.backoffMax); err != nil {
		if !errors.Is(err, channels.ErrDenied) {
			// whatsmeow acknowledges the message once this handler
			// returns, whatever became of it.
			channels.ReportLost(in, m, err, c.log)
		}
		return
	}
	if err := cli.MarkRead(ctx, []types.MessageID{e.Info.ID}, time.Now(), e.Info.Chat, e.Info.Sender); err != nil {
		c.log.Debug("whatsapp: read receipt failed", "err", err)
	}
}

// toInbound converts a message event; false for what the bot should not
// answer (its own messages, status updates, edits, reactions, group
// messages not for it) and for empty ones.
func (c *Channel) toInbound(ctx context.Context, cli client, in channels.Inbox, e *events.Message) (bus.Inbound, bool) {
	info := e.Info
	if info.IsFromMe || info.Chat.Server == types.BroadcastServer || e.IsEdit || e.Message == nil {
		return bus.Inbound{}, false
	}
	msg := e.Message
	if msg.GetReactionMessage() != nil || msg.GetProtocolMessage() != nil {
		return bus.Inbound{}, false
	}
	text, ctxInfo := textOf(msg)
	if !c.cfg.GroupPolicy.Admits(info.IsGroup, info.IsGroup && c.addressed(cli, ctxInfo), info.Chat.String(), c.cfg.GroupAllowFrom) {
		c.log.Debug("whatsapp: group message not for the bot skipped", "chat", info.Chat)
		return bus.Inbound{}, false
	}
	sender := c.senderID(ctx, cli, info.MessageSource)
	m := bus.Inbound{
		Channel:    c.Name(),
		SenderID:   sender,
		ChatID:     info.Chat.String(),
		MessageID:  info.ID,
		IsGroup:    info.IsGroup,
		ReceivedAt: time.Now(),
		Metadata:   bus.Metadata{"message_id": info.ID, "sender_jid": info.Sender.String(), "push_name": info.PushName},
	}
	parts := []string{}
	if t := strings.TrimSpace(c.stripMentions(cli, text)); t != "" {
		parts = append(parts, t)
	}
	if d, kind, name, mime, size := attachmentOf(msg); d != nil {
		md, note := c.download(ctx, cli, in, m, d, kind, name, mime, size)
		if md.Path != "" {
			m.Media = append(m.Media, md)
		}
		if note != "" {
			parts = append(parts, note)
		}
	}
	m.Content = strings.Join(parts, "\n")
	if m.Content == "" && len(m.Media) == 0 {
		return bus.Inbound{}, false
	}
	return m, true
}

// textOf returns the message's text (or caption) and its context info
// (mentions, the quoted message).
func textOf(msg *waE2E.Message) (string, *waE2E.ContextInfo) {
	switch {
	case msg.GetConversation() != "":
		return msg.GetConversation(), nil
	case msg.GetExtendedTextMessage() != nil:
		x := msg.GetExtendedTextMessage()
		return x.GetText(), x.GetContextInfo()
	case msg.GetImageMessage() != nil:
		return msg.GetImageMessage().GetCaption(), msg.GetImageMessage().GetContextInfo()
	case msg.GetVideoMessage() != nil:
		return msg.GetVideoMessage().GetCaption(), msg.GetVideoMessage().GetContextInfo()
	case msg.GetDocumentMessage() != nil:
		return msg.GetDocumentMessage().GetCaption(), msg.GetDocumentMessage().GetContextInfo()
	case msg.GetAudioMessage() != nil:
		return "", msg.GetAudioMessage().GetContextInfo()
	}
	return "", nil
}

// addressed reports whether a group message mentions the bot or quotes one
// of its messages.
func (c *Channel) addressed(cli client, ci *waE2E.ContextInfo) bool {
	if ci == nil {
		return false
	}
	pn, lid := cli.Own()
	mine := func(s string) bool {
		j, err := types.ParseJID(s)
		if err != nil {
			return false
		}
		j = j.ToNonAD()
		return (!pn.IsEmpty() && j == pn) || (!lid.IsEmpty() && j == lid)
	}
	return slices.ContainsFunc(ci.GetMentionedJID(), mine) || (ci.GetStanzaID() != "" && mine(ci.GetParticipant()))
}

// stripMentions removes "@<bot number>" mentions from the text.
func (c *Channel) stripMentions(cli client, text string) string {
	pn, lid := cli.Own()
	for _, j := range []types.JID{pn, lid} {
		if j.User != "" {
			text = strings.ReplaceAll(text, "@"+j.User, "")
		}
	}
	return strings.Join(strings.Fields(text), " ")
}

// senderID is "<phone>|+<phone>|<jid>" (and the LID when the message came
// from one), so allowFrom may list a number with or without "+", or a JID.
// Senders known only by their LID are mapped to their number through the
// device store.
func (c *Channel) senderID(ctx context.Context, cli client, src types.MessageSource) string {
	sender := src.Sender.ToNonAD()
	pn := types.EmptyJID
	switch {
	case sender.Server == types.DefaultUserServer:
		pn = sender
	case src.SenderAlt.Server == types.DefaultUserServer:
		pn = src.SenderAlt.ToNonAD()
	case sender.Server == types.HiddenUserServer:
		if j, err := cli.PhoneOf(ctx, sender); err == nil && !j.IsEmpty() {
			pn = j.ToNonAD()
		}
	}
	var ids []string
	if !pn.IsEmpty() {
		ids = append(ids, pn.User, "+"+pn.User, pn.String())
	}
	if sender != pn {
		ids = append(ids, sender.String())
	}
	return strings.Join(ids, "|")
}

// attachmentOf returns the downloadable part of msg, if any.
func attachmentOf(msg *waE2E.Message) (d whatsmeow.DownloadableMessage, kind, name, mime string, size uint64) {
	switch {
	case msg.GetImageMessage() != nil:
		x := msg.GetImageMessage()
		return x, "image", "", x.GetMimetype(), x.GetFileLength()
	case msg.GetAudioMessage() != nil:
		x := msg.GetAudioMessage()
		kind = "audio"
		if x.GetPTT() {
			kind = "voice message"
		}
		return x, kind, "", x.GetMimetype(), x.GetFileLength()
	case msg.GetDocumentMessage() != nil:
		x := msg.GetDocumentMessage()
		return x, "document", x.GetFileName(), x.GetMimetype(), x.GetFileLength()
	case msg.GetVideoMessage() != nil:
		x := msg.GetVideoMessage()
		return x, "video", "", x.GetMimetype(), x.GetFileLength()
	}
	return nil, "", "", "", 0
}

// download fetches and decrypts an attachment into the media folder, only
// for senders the gate admits and at most maxMediaBytes.
func (c *Channel) download(ctx context.Context, cli client, in channels.Inbox, m bus.Inbound, d whatsmeow.DownloadableMessage, kind, name, mime string, size uint64) (bus.Media, string) {
	label := kind
	if name != "" {
		label += " " + name
	}
	if c.mediaDir == "" || !channels.Admits(in, c.Name(), m.SenderID) {
		return bus.Media{}, "[" + label + ": not downloaded]"
	}
	if int64(size) > c.cfg.MaxMediaBytes {
		return bus.Media{}, media.TooLarge(label, int64(size), c.cfg.MaxMediaBytes)
	}
	data, err := cli.Download(ctx, d)
	if err != nil {
		c.log.Warn("whatsapp: attachment download failed", "kind", kind, "err", err)
		return bus.Media{}, "[" + label + ": download failed]"
	}
	if int64(len(data)) > c.cfg.MaxMediaBytes {
		return bus.Media{}, media.TooLarge(label, 0, c.cfg.MaxMediaBytes)
	}
	if mime == "" {
		mime = http.DetectContentType(data)
	}
	mime, _, _ = strings.Cut(mime, ";")
	file, err := media.Save(c.mediaDir, fmt.Sprintf("%s_%s%s", strings.SplitN(m.ChatID, "@", 2)[0], m.MessageID, media.Ext(name, "", mime)), data)
	if err != nil {
		c.log.Warn("whatsapp: saving an attachment failed", "err", err)
		return bus.Media{}, "[" + label + ": could not be saved]"
	}
	return bus.Media{Path: file, MIMEType: mime, Name: name, Size: int64(len(data))}, ""
}
