package mochat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// watchAnswer is the data of a sessions/watch answer.
type watchAnswer struct {
	Cursor     json.Number `json:"cursor"`
	NextCursor json.Number `json:"nextCursor"`
	Events     []struct {
		Seq       json.Number     `json:"seq"`
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Payload   json.RawMessage `json:"payload"`
	} `json:"events"`
}

// message is a Mochat message, as a watch event's payload or in a panel's
// message list.
type message struct {
	MessageID  string          `json:"messageId"`
	ID         string          `json:"id"`
	Author     json.RawMessage `json:"author"`
	AuthorInfo struct {
		ID       string `json:"id"`
		UserID   string `json:"userId"`
		OID      string `json:"_id"`
		Nickname string `json:"nickname"`
		Name     string `json:"name"`
	} `json:"authorInfo"`
	Content   json.RawMessage `json:"content"`
	CreatedAt string          `json:"createdAt"`
	Meta      struct {
		Mentions json.RawMessage `json:"mentions"`
	} `json:"meta"`
	GroupID string `json:"groupId"`
}

// errGaveUp ends the watchers after a message could not be handed to the
// gateway; they start again after a backoff and the platform gives the
// message again (the cursor did not move past it).
var errGaveUp = errors.New("mochat: a message could not be queued; retrying from the last cursor")

// serve runs one round of watchers until one fails or ctx ends.
func (c *Channel) serve(ctx context.Context, in channels.Inbox, up func()) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sessions, panels, err := c.allTargets(ctx)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	started := map[string]bool{}
	start := func(kind, id string) error {
		if started[kind+id] {
			return nil
		}
		if err := c.coldStart(ctx, in, kind, id); err != nil {
			return err
		}
		started[kind+id] = true
		wg.Go(func() {
			var err error
			if kind == "session" {
				err = c.watchSession(ctx, in, id)
			} else {
				err = c.pollPanel(ctx, in, id)
			}
			if err != nil {
				cancel(err)
			}
		})
		return nil
	}
	if err := eachTarget(sessions, panels, start); err != nil {
		return err
	}
	up()
	c.log.Info("mochat: watching", "sessions", len(sessions), "panels", len(panels))
	rediscover, stop := c.rediscovery()
	defer stop()
	for {
		select {
		case <-ctx.Done():
			if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		case <-rediscover:
			s, p, err := c.allTargets(ctx)
			if err != nil {
				return err
			}
			if err := eachTarget(s, p, start); err != nil {
				return err
			}
		}
	}
}

// allTargets resolves the configured sessions and panels.
func (c *Channel) allTargets(ctx context.Context) (sessions, panels []string, err error) {
	sessions, err = c.targets(ctx, c.cfg.Sessions, "/api/claw/sessions/list", "sessions", "sessionId")
	if err != nil {
		return nil, nil, err
	}
	panels, err = c.targets(ctx, c.cfg.Panels, "/api/claw/groups/get", "panels", "panelId")
	return sessions, panels, err
}

// rediscovery ticks every refreshIntervalMs while sessions or panels is
// "*", so that targets the account gained since are found; it never ticks
// otherwise. stop releases its ticker.
func (c *Channel) rediscovery() (ticks <-chan time.Time, stop func()) {
	if !slices.Contains(c.cfg.Sessions, "*") && !slices.Contains(c.cfg.Panels, "*") {
		return nil, func() {}
	}
	t := time.NewTicker(time.Duration(c.cfg.RefreshIntervalMs) * time.Millisecond)
	return t.C, t.Stop
}

// eachTarget calls fn for every session, then for every panel, and stops
// at the first error.
func eachTarget(sessions, panels []string, fn func(kind, id string) error) error {
	for _, id := range sessions {
		if err := fn("session", id); err != nil {
			return err
		}
	}
	for _, id := range panels {
		if err := fn("panel", id); err != nil {
			return err
		}
	}
	return nil
}

// targets resolves a sessions or panels list: "*" asks the server.
func (c *Channel) targets(ctx context.Context, list []string, path, field, idKey string) ([]string, error) {
	var out []string
	all := false
	for _, v := range list {
		if v = strings.TrimSpace(v); v == "*" {
			all = true
		} else if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if !all {
		return out, nil
	}
	var data map[string][]map[string]any
	if err := c.call(ctx, path, map[string]any{}, &data); err != nil {
		return nil, fmt.Errorf("mochat: listing %s: %w", field, err)
	}
	for _, item := range data[field] {
		id, _ := item[idKey].(string)
		if id == "" {
			id, _ = item["id"].(string)
		}
		if id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// coldStart reads the history of a session or panel seen for the first
// time without answering it: only messages written after the channel
// started (by their timestamp, with coldSkew for clock differences) are
// answered; those without a timestamp count as history.
func (c *Channel) coldStart(ctx context.Context, in channels.Inbox, kind, id string) error {
	if kind == "session" {
		if _, ok := c.state.get(id); ok {
			return nil
		}
		d := c.dedup("session:" + id)
		var cursor int64
		for {
			var a watchAnswer
			if err := c.call(ctx, "/api/claw/sessions/watch", map[string]any{"sessionId": id, "cursor": cursor, "timeoutMs": 0, "limit": c.cfg.WatchLimit}, &a); err != nil {
				return fmt.Errorf("mochat: session %s: %w", id, err)
			}
			for _, ev := range a.Events {
				var m message
				if json.Unmarshal(ev.Payload, &m) != nil {
					continue
				}
				if !c.fresh(ev.Timestamp, m.CreatedAt) {
					d.Seen(m.id())
					continue
				}
				if err := c.handle(ctx, in, "session", id, m, ""); err != nil {
					return err
				}
			}
			next := cursorOf(a, cursor)
			if len(a.Events) < c.cfg.WatchLimit || next == cursor {
				c.saveCursor(id, next)
				return nil
			}
			cursor = next
		}
	}
	msgs, group, err := c.panelMessages(ctx, id)
	if err != nil {
		return err
	}
	d := c.dedup("panel:" + id)
	last := c.state.lastOf(id)
	after := slices.IndexFunc(msgs, func(m message) bool { return m.id() == last })
	for i, m := range msgs {
		old := !c.fresh("", m.CreatedAt)
		if after >= 0 { // the saved position decides, not the clock
			old = i <= after
		}
		if old {
			d.Seen(m.id())
			continue
		}
		if err := c.handle(ctx, in, "panel", id, m, group); err != nil {
			return err
		}
	}
	c.markPanel(id, msgs)
	return nil
}

// markPanel saves the newest message of a panel read so far.
func (c *Channel) markPanel(id string, msgs []message) {
	if len(msgs) == 0 {
		return
	}
	if err := c.state.setLast(id, msgs[len(msgs)-1].id()); err != nil {
		c.log.Warn("mochat: saving the panel position failed", "panel", id, "err", err)
	}
}

// coldSkew is how much older than the channel's start a message may be
// and still count as new at a cold start (clocks differ).
const coldSkew = 2 * time.Second

// fresh reports whether a message timestamp is after the channel started.
func (c *Channel) fresh(stamps ...string) bool {
	for _, s := range stamps {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t.After(c.started.Add(-coldSkew))
		}
	}
	return false
}

// saveCursor records a session's cursor; a failed save is logged (the
// cursor still moves on in memory, so messages are not answered twice in
// this run).
func (c *Channel) saveCursor(session string, cursor int64) {
	if err := c.state.set(session, cursor); err != nil {
		c.log.Warn("mochat: saving the session cursor failed", "session", session, "err", err)
	}
}

func cursorOf(a watchAnswer, current int64) int64 {
	for _, n := range []json.Number{a.Cursor, a.NextCursor} {
		if v, err := n.Int64(); err == nil && v >= current {
			return v
		}
	}
	return current
}

// watchSession long-polls one session until ctx ends or a request fails.
func (c *Channel) watchSession(ctx context.Context, in channels.Inbox, id string) error {
	for ctx.Err() == nil {
		cursor, _ := c.state.get(id)
		var a watchAnswer
		err := c.call(ctx, "/api/claw/sessions/watch", map[string]any{"sessionId": id, "cursor": cursor, "timeoutMs": c.cfg.WatchTimeoutMs, "limit": c.cfg.WatchLimit}, &a)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("mochat: watching session %s: %w", id, err)
		}
		for _, ev := range a.Events {
			if ev.Type != "" && ev.Type != "message.add" {
				continue
			}
			var m message
			if err := json.Unmarshal(ev.Payload, &m); err != nil {
				c.log.Warn("mochat: unreadable message skipped", "session", id, "seq", ev.Seq.String(), "err", err)
				continue
			}
			if err := c.handle(ctx, in, "session", id, m, ""); err != nil {
				return err
			}
		}
		c.saveCursor(id, cursorOf(a, cursor))
	}
	return nil
}

// panelMessages reads a panel's latest messages, oldest first.
func (c *Channel) panelMessages(ctx context.Context, id string) ([]message, string, error) {
	var data struct {
		Messages []json.RawMessage `json:"messages"`
		GroupID  string            `json:"groupId"`
	}
	if err := c.call(ctx, "/api/claw/groups/panels/messages", map[string]any{"panelId": id, "limit": c.cfg.PanelLimit}, &data); err != nil {
		return nil, "", fmt.Errorf("mochat: reading panel %s: %w", id, err)
	}
	out := make([]message, 0, len(data.Messages))
	for i := len(data.Messages) - 1; i >= 0; i-- { // the server lists newest first
		var m message
		if err := json.Unmarshal(data.Messages[i], &m); err != nil {
			c.log.Warn("mochat: unreadable panel message skipped", "panel", id, "err", err)
			continue
		}
		out = append(out, m)
	}
	if data.GroupID != "" {
		c.mu.Lock()
		c.groups[id] = data.GroupID
		c.mu.Unlock()
	}
	return out, data.GroupID, nil
}

// pollPanel polls one panel until ctx ends or a request fails.
func (c *Channel) pollPanel(ctx context.Context, in channels.Inbox, id string) error {
	every := time.Duration(c.cfg.PollIntervalMs) * time.Millisecond
	for {
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		msgs, group, err := c.panelMessages(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for _, m := range msgs {
			if m.GroupID == "" {
				m.GroupID = group
			}
			if err := c.handle(ctx, in, "panel", id, m, group); err != nil {
				return err
			}
		}
		c.markPanel(id, msgs)
	}
}

func (m message) id() string {
	if m.MessageID != "" {
		return m.MessageID
	}
	return m.ID
}

func (m message) sender() string {
	var s string
	if json.Unmarshal(m.Author, &s) == nil && strings.TrimSpace(s) != "" {
		return strings.TrimSpace(s)
	}
	var obj struct {
		ID     string `json:"id"`
		UserID string `json:"userId"`
		OID    string `json:"_id"`
	}
	if json.Unmarshal(m.Author, &obj) == nil {
		for _, v := range []string{obj.ID, obj.UserID, obj.OID} {
			if v != "" {
				return v
			}
		}
	}
	for _, v := range []string{m.AuthorInfo.ID, m.AuthorInfo.UserID, m.AuthorInfo.OID} {
		if v != "" {
			return v
		}
	}
	return ""
}

func (m message) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return strings.TrimSpace(s)
	}
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return ""
	}
	return strings.TrimSpace(string(m.Content)) // structured content, as JSON
}

// mentions reports whether the message mentions user.
func (m message) mentions(user string) bool {
	if user == "" || len(m.Meta.Mentions) == 0 {
		return false
	}
	var ids []string
	if json.Unmarshal(m.Meta.Mentions, &ids) == nil {
		return slices.Contains(ids, user)
	}
	var objs []map[string]any
	if json.Unmarshal(m.Meta.Mentions, &objs) == nil {
		for _, o := range objs {
			for _, k := range []string{"id", "userId", "_id"} {
				if v, _ := o[k].(string); v == user {
					return true
				}
			}
		}
	}
	return false
}

// handle delivers one message unless it is a duplicate, the bot's own, or
// (in a panel under the mention policy) not addressed to the bot.
func (c *Channel) handle(ctx context.Context, in channels.Inbox, kind, target string, m message, group string) error {
	id := m.id()
	d := c.dedup(kind + ":" + target)
	if d.Seen(id) {
		return nil
	}
	sender := m.sender()
	switch {
	case id == "" || sender == "":
		c.log.Warn("mochat: message without id or author skipped", "target", target, "message_id", id)
		return nil
	case sender == c.cfg.AgentUserID:
		return nil
	}
	isPanel := kind == "panel"
	mentioned := m.mentions(c.cfg.AgentUserID)
	// Under the non-mention reply delay, a panel message that does not
	// mention the bot is held instead of following the mention rule; the
	// allowlist still applies.
	hold := isPanel && c.delay != nil && !mentioned
	if !c.cfg.GroupPolicy.Admits(isPanel, mentioned || hold, target, c.cfg.GroupAllowFrom) {
		return nil
	}
	text := m.text()
	if text == "" {
		return nil
	}
	chatID := target
	if kind == "panel" {
		chatID = panelPrefix + target
	}
	meta := bus.Metadata{"source": kind}
	if group != "" {
		meta["group_id"] = group
	}
	if name := m.AuthorInfo.Nickname + m.AuthorInfo.Name; name != "" {
		meta["sender_name"] = name
	}
	msg := bus.Inbound{
		Channel: c.Name(), SenderID: sender, ChatID: chatID, MessageID: id, IsGroup: kind == "panel",
		Content: text, Metadata: meta, ReceivedAt: time.Now(),
	}
	if hold {
		c.delay.hold(msg)
		return nil
	}
	var held []bus.Inbound
	if isPanel && c.delay != nil {
		if held = c.delay.take(chatID); len(held) > 0 {
			msg = merge(append(held, msg))
		}
	}
	err := channels.DeliverRetrying(ctx, in, msg, c.log, c.backoffMin, c.backoffMax)
	if err == nil || errors.Is(err, channels.ErrDenied) {
		return nil
	}
	// Not taken (also when ctx ended while the gateway could not store):
	// the cursor must not move past it, so that the platform gives it
	// again; what was held for it goes back to wait for that.
	for _, h := range held {
		c.delay.hold(h)
	}
	d.Forget(id)
	return fmt.Errorf("%w: %w", errGaveUp, err)
}

const panelPrefix = "panel:"
