package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// link is how a session reports the connection state to the Loop: up on
// hello, lost while the Socket Mode library reconnects by itself.
type link struct {
	up   func()
	lost func(error)
}

// session learns who the bot is, then runs one Socket Mode client until it
// fails or ctx ends, and returns why.
func (c *Channel) session(ctx context.Context, in channels.Inbox, l link) error {
	auth, err := c.api.AuthTestContext(ctx)
	if err != nil {
		return fmt.Errorf("auth.test: %w", err)
	}
	c.mu.Lock()
	c.botID = auth.UserID
	c.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sm := socketmode.New(c.api, socketmode.OptionPingInterval(c.pingInterval))
	var wg sync.WaitGroup
	runErr := make(chan error, 1)
	wg.Go(func() {
		err := sm.RunContext(ctx)
		cancel()
		runErr <- err
	})
	connected := false
	for loop := true; loop; {
		select {
		case <-ctx.Done():
			loop = false
		case ev := <-sm.Events:
			c.handleEvent(ctx, sm, in, ev, l, &connected)
		}
	}
	wg.Wait()
	err = <-runErr
	if err == nil || errors.Is(err, context.Canceled) {
		err = errors.New("socket mode ended")
	}
	return err
}

// handleEvent handles one socketmode event; connected tracks whether the
// connection is up, for reporting its loss.
func (c *Channel) handleEvent(ctx context.Context, sm *socketmode.Client, in channels.Inbox, ev socketmode.Event, l link, connected *bool) {
	switch ev.Type {
	case socketmode.EventTypeConnecting:
		if *connected {
			*connected = false
			l.lost(nil)
		}
	case socketmode.EventTypeConnectionError:
		err := errors.New("connection error")
		if ce, ok := ev.Data.(*slack.ConnectionErrorEvent); ok && ce.ErrorObj != nil {
			err = ce.ErrorObj
		}
		c.log.Warn("slack: socket mode connect failed; the library retries", "err", c.redact.Error(err))
		*connected = false
		l.lost(err)
	case socketmode.EventTypeHello: // Slack confirmed the connection
		*connected = true
		l.up()
		c.log.Info("slack: connected", "bot", c.self())
	case socketmode.EventTypeIncomingError, socketmode.EventTypeErrorWriteFailed:
		c.log.Warn("slack: socket mode error", "type", string(ev.Type), "data", fmt.Sprint(ev.Data))
	case socketmode.EventTypeErrorBadMessage:
		bad, _ := ev.Data.(*socketmode.ErrorBadMessage)
		var env struct {
			EnvelopeID string `json:"envelope_id"`
		}
		cause := "unknown"
		if bad != nil {
			cause = bad.Cause.Error()
			_ = json.Unmarshal(bad.Message, &env)
		}
		c.log.Warn("slack: malformed socket mode message skipped", "err", cause)
		if env.EnvelopeID != "" { // acknowledged: a redelivery would fail the same way
			_ = sm.AckCtx(ctx, env.EnvelopeID, nil)
		}
	case socketmode.EventTypeEventsAPI:
		api, ok := ev.Data.(slackevents.EventsAPIEvent)
		if !ok || ev.Request == nil {
			c.log.Warn("slack: events_api envelope without an event skipped")
			return
		}
		if home, ok := api.InnerEvent.Data.(*slackevents.AppHomeOpenedEvent); ok {
			// Acknowledged first: publishing the view may take longer
			// than Slack waits, and an event redelivered would only
			// publish it again.
			if err := sm.AckCtx(ctx, ev.Request.EnvelopeID, nil); err != nil && ctx.Err() == nil {
				c.log.Warn("slack: acknowledging an envelope failed", "err", err)
			}
			c.openedHome(ctx, in, home)
			return
		}
		if !c.handleEventsAPI(ctx, in, api) {
			return // not acknowledged: Slack sends the event again
		}
		// Only now, after Deliver returned (or the event was skipped).
		if err := sm.AckCtx(ctx, ev.Request.EnvelopeID, nil); err != nil && ctx.Err() == nil {
			c.log.Warn("slack: acknowledging an envelope failed", "err", err)
		}
	case socketmode.EventTypeInteractive:
		cb, ok := ev.Data.(slack.InteractionCallback)
		if ok && !c.handleInteraction(ctx, in, cb) {
			return // not acknowledged: Slack shows the press failed
		}
		if ev.Request != nil {
			_ = sm.AckCtx(ctx, ev.Request.EnvelopeID, nil)
		}
	case socketmode.EventTypeSlashCommand:
		c.handleSlash(ctx, sm, in, ev)
	}
	return
}

// handleEventsAPI turns an app_mention or message event into an Inbound
// and delivers it. It reports whether the envelope may be acknowledged:
// false for a message the gateway did not take.
func (c *Channel) handleEventsAPI(ctx context.Context, in channels.Inbox, api slackevents.EventsAPIEvent) bool {
	var m msg
	switch e := api.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		m = msg{channel: e.Channel, user: e.User, text: e.Text, ts: e.TimeStamp, threadTS: e.ThreadTimeStamp, botID: e.BotID, mention: true}
	case *slackevents.MessageEvent:
		m = msg{channel: e.Channel, channelType: e.ChannelType, user: e.User, text: e.Text, ts: e.TimeStamp, threadTS: e.ThreadTimeStamp, botID: e.BotID, subtype: e.SubType}
		if e.Message != nil { // a new message's fields, files included, decoded whole
			m.files = e.Message.Files
		}
	default:
		c.log.Debug("slack: event skipped", "type", api.InnerEvent.Type)
		return true
	}
	inb, ok := c.toInbound(m)
	if !ok {
		return true
	}
	key := inb.ChatID + "/" + inb.MessageID
	if c.seen.Seen(key) {
		return true
	}
	if len(m.files) > 0 {
		c.download(ctx, in, &inb, m.files)
	}
	switch err := channels.DeliverRetrying(ctx, in, inb, c.log, c.backoffMin, c.backoffMax); {
	case errors.Is(err, channels.ErrDenied):
		return true
	case err != nil:
		if ctx.Err() == nil {
			c.log.Warn("slack: the gateway did not take a message; left unacknowledged for Slack to send again", "chat_id", inb.ChatID, "message_id", inb.MessageID, "err", err)
		}
		c.seen.Forget(key)
		return false
	}
	if c.cfg.reactions() {
		if err := c.React(ctx, inb.ChatID, inb.MessageID, "eyes"); err != nil && ctx.Err() == nil {
			c.log.Debug("slack: 👀 reaction failed", "err", err)
		}
	}
	return true
}

// msg is the part of a message or app_mention event the adapter uses.
type msg struct {
	channel, channelType, user, text, ts, threadTS, botID, subtype string
	mention                                                        bool
	files                                                          []slack.File
}

var mentionRE = regexp.MustCompile(`<@([A-Z0-9]+)(?:\|[^>]*)?>`)

// toInbound converts a message. It reports false for messages the bot
// should not answer (its own, edits and other subtypes, group policy) and
// for malformed ones (logged).
func (c *Channel) toInbound(m msg) (bus.Inbound, bool) {
	if m.botID != "" || m.subtype != "" && m.subtype != "thread_broadcast" && m.subtype != "file_share" {
		return bus.Inbound{}, false
	}
	if m.channel == "" || m.user == "" || m.ts == "" {
		c.log.Warn("slack: message without a channel, user or ts skipped", "channel", m.channel, "ts", m.ts)
		return bus.Inbound{}, false
	}
	me := c.self()
	if me != "" && m.user == me {
		return bus.Inbound{}, false
	}
	isDM := m.channelType == "im" || m.channelType == "" && strings.HasPrefix(m.channel, "D")
	mentioned := m.mention
	text := m.text
	if me != "" && strings.Contains(text, "<@"+me) {
		mentioned = true
		text = strings.TrimSpace(mentionRE.ReplaceAllStringFunc(text, func(s string) string {
			if mentionRE.FindStringSubmatch(s)[1] == me {
				return ""
			}
			return s
		}))
	}
	if !c.cfg.GroupPolicy.Admits(!isDM, mentioned, m.channel, c.cfg.AllowChannels) {
		c.log.Debug("slack: channel message not for the bot skipped", "channel", m.channel)
		return bus.Inbound{}, false
	}
	text = fromMrkdwn(strings.TrimSpace(text))
	if text == "" && len(m.files) == 0 {
		return bus.Inbound{}, false
	}
	meta := bus.Metadata{"ts": m.ts, "user_id": m.user}
	if m.channelType != "" {
		meta["channel_type"] = m.channelType
	}
	in := bus.Inbound{
		Channel:    c.Name(),
		SenderID:   m.user,
		ChatID:     m.channel,
		Content:    text,
		MessageID:  m.ts,
		IsGroup:    !isDM,
		Metadata:   meta,
		ReceivedAt: time.Now(),
	}
	thread := m.threadTS
	if thread == "" && !isDM && c.cfg.threads() {
		thread = m.ts // the answer starts a thread under the message
	}
	if thread != "" && c.cfg.threads() {
		meta["thread_ts"] = thread
		in.SessionKey = bus.SessionKeyOf(c.Name(), m.channel, "thread", thread)
		in.ThreadID = thread
	}
	return in, true
}
