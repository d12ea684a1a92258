package signal

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

// receiveParams are the params of a `receive` notification (and the data
// of a `receive` SSE event).
type receiveParams struct {
	Envelope *envelope `json:"envelope"`
	Account  string    `json:"account"`
}

type envelope struct {
	Source       string       `json:"source"`
	SourceNumber string       `json:"sourceNumber"`
	SourceUUID   string       `json:"sourceUuid"`
	SourceName   string       `json:"sourceName"`
	Timestamp    int64        `json:"timestamp"`
	DataMessage  *dataMessage `json:"dataMessage"`
}

type dataMessage struct {
	Timestamp   int64        `json:"timestamp"`
	Message     string       `json:"message"`
	Mentions    []mention    `json:"mentions"`
	Attachments []attachment `json:"attachments"`
	GroupInfo   *struct {
		GroupID string `json:"groupId"`
	} `json:"groupInfo"`
	Quote *struct {
		AuthorNumber string `json:"authorNumber"`
		AuthorUUID   string `json:"authorUuid"`
		Author       string `json:"author"`
	} `json:"quote"`
}

// mention is one @mention: signal-cli puts U+FFFC in the text at Start
// (in UTF-16 units) for Length units.
type mention struct {
	Name   string `json:"name"`
	Number string `json:"number"`
	UUID   string `json:"uuid"`
	Start  int    `json:"start"`
	Length int    `json:"length"`
}

type attachment struct {
	ContentType string `json:"contentType"`
	Filename    string `json:"filename"`
	ID          string `json:"id"`
	Size        int64  `json:"size"`
}

// groupPrefix marks a group chat id.
const groupPrefix = "group:"

// receive handles one received envelope. It returns an error only when
// the gateway could not take the message (the caller then reads it again
// if it can); anything unreadable or not for the bot is logged and skipped.
func (c *Channel) receive(ctx context.Context, in channels.Inbox, data []byte) error {
	var p receiveParams
	if err := json.Unmarshal(data, &p); err != nil || p.Envelope == nil {
		if err == nil {
			err = errors.New("no envelope")
		}
		c.log.Warn("signal: unreadable receive event skipped", "bytes", len(data), "err", err)
		return nil
	}
	if p.Account != "" && p.Account != c.cfg.Account {
		c.log.Debug("signal: event for another account skipped", "account", p.Account)
		return nil
	}
	m, key, ok := c.toInbound(p.Envelope)
	if !ok {
		return nil
	}
	c.mu.Lock()
	since := c.since
	c.mu.Unlock()
	if sent := time.UnixMilli(p.Envelope.Timestamp); sent.Before(since) {
		c.log.Info("signal: message from before the channel first started skipped", "chat_id", m.ChatID, "sent", sent)
		return nil
	}
	if c.dedup.Seen(key) {
		return nil
	}
	if items := c.attachments(p.Envelope); len(items) > 0 {
		media.Collector{Dir: c.mediaDir, Max: c.cfg.MaxMediaBytes, Platform: "signal", Log: c.log, Redact: c.redact.String}.
			Collect(ctx, &m, channels.Admits(in, c.Name(), m.SenderID), items)
	}
	if m.Content == "" && len(m.Media) == 0 {
		return nil
	}
	err := channels.DeliverRetrying(ctx, in, m, c.log, c.backoffMin, c.backoffMax)
	if err == nil || errors.Is(err, channels.ErrDenied) {
		return nil
	}
	c.dedup.Forget(key)
	if ctx.Err() != nil {
		return nil
	}
	return &notTakenError{m: m, err: err}
}

// notTakenError is receive's error for a message the gateway did not
// take: the event stream leaves its event unconfirmed, the TCP transport
// (which never sends a notification twice) reports the message lost.
type notTakenError struct {
	m   bus.Inbound
	err error
}

func (e *notTakenError) Error() string { return e.err.Error() }
func (e *notTakenError) Unwrap() error { return e.err }

// toInbound converts an envelope carrying a data message. It reports false
// for envelopes without one (receipts, typing, sync), the bot's own
// messages, malformed ones (logged) and group messages the policy skips.
func (c *Channel) toInbound(e *envelope) (bus.Inbound, string, bool) {
	d := e.DataMessage
	if d == nil {
		return bus.Inbound{}, "", false
	}
	number := e.SourceNumber
	if number == "" && strings.HasPrefix(e.Source, "+") {
		number = e.Source
	}
	if (number == "" && e.SourceUUID == "") || e.Timestamp == 0 {
		c.log.Warn("signal: message without sender or timestamp skipped")
		return bus.Inbound{}, "", false
	}
	if number == c.cfg.Account || (c.cfg.AccountUUID != "" && e.SourceUUID == c.cfg.AccountUUID) {
		return bus.Inbound{}, "", false
	}
	sender := strings.Trim(number+"|"+e.SourceUUID, "|")
	author := e.SourceUUID
	if author == "" {
		author = number
	}
	chat := number
	if chat == "" {
		chat = e.SourceUUID
	}
	group := d.GroupInfo != nil && d.GroupInfo.GroupID != ""
	if group {
		chat = groupPrefix + d.GroupInfo.GroupID
	}
	text, addressed := c.resolveMentions(d.Message, d.Mentions)
	if q := d.Quote; q != nil && (q.AuthorNumber == c.cfg.Account || q.Author == c.cfg.Account || (c.cfg.AccountUUID != "" && q.AuthorUUID == c.cfg.AccountUUID)) {
		addressed = true
	}
	if group && !c.cfg.GroupPolicy.Admits(true, addressed, d.GroupInfo.GroupID, c.cfg.GroupAllowFrom) {
		c.log.Debug("signal: group message not for the bot skipped", "group_id", d.GroupInfo.GroupID)
		return bus.Inbound{}, "", false
	}
	ts := strconv.FormatInt(e.Timestamp, 10)
	meta := bus.Metadata{"timestamp": ts, "author": author}
	if e.SourceName != "" {
		meta["display_name"] = e.SourceName
	}
	if group {
		meta["group_id"] = d.GroupInfo.GroupID
	}
	return bus.Inbound{
		Channel: c.Name(), SenderID: sender, ChatID: chat, MessageID: ts, Content: strings.TrimSpace(text),
		IsGroup: group, Metadata: meta, ReceivedAt: time.Now(),
	}, author + "/" + ts, true
}

// resolveMentions writes each mention's placeholder as "@name" and drops
// the bot's own; it reports whether the bot was mentioned.
func (c *Channel) resolveMentions(text string, ms []mention) (string, bool) {
	if len(ms) == 0 {
		return text, false
	}
	units := utf16.Encode([]rune(text))
	ms = slices.Clone(ms)
	slices.SortFunc(ms, func(a, b mention) int { return b.Start - a.Start })
	addressed := false
	for _, m := range ms {
		if m.Start < 0 || m.Length < 0 || m.Start+m.Length > len(units) {
			continue
		}
		self := m.Number == c.cfg.Account || (c.cfg.AccountUUID != "" && m.UUID == c.cfg.AccountUUID)
		var with []uint16
		end := m.Start + m.Length
		if self {
			addressed = true
			if end < len(units) && units[end] == ' ' {
				end++ // "@bot hello" becomes "hello"
			}
		} else {
			name := m.Name
			if name == "" {
				name = m.Number
			}
			if name == "" {
				name = m.UUID
			}
			with = utf16.Encode([]rune("@" + name))
		}
		units = slices.Concat(units[:m.Start], with, units[end:])
	}
	return string(utf16.Decode(units)), addressed
}

// attachments lists an envelope's files, fetched through getAttachment.
func (c *Channel) attachments(e *envelope) []media.Item {
	var items []media.Item
	for _, a := range e.DataMessage.Attachments {
		if a.ID == "" {
			continue
		}
		name := a.Filename
		if name == "" {
			name = a.ID
		}
		items = append(items, media.Item{Name: name, MIMEType: a.ContentType, Fetch: func(ctx context.Context) ([]byte, error) {
			if a.Size > c.cfg.MaxMediaBytes {
				return nil, media.ErrTooLarge
			}
			var out struct {
				Data string `json:"data"`
			}
			if err := c.call(ctx, "getAttachment", map[string]any{"id": a.ID}, &out); err != nil {
				return nil, err
			}
			if int64(base64.StdEncoding.DecodedLen(len(out.Data))) > c.cfg.MaxMediaBytes+3 {
				return nil, media.ErrTooLarge
			}
			data, err := base64.StdEncoding.DecodeString(out.Data)
			if err != nil {
				return nil, fmt.Errorf("signal: getAttachment %s: %w", a.ID, err)
			}
			if int64(len(data)) > c.cfg.MaxMediaBytes {
				return nil, media.ErrTooLarge
			}
			return data, nil
		}})
	}
	return items
}
