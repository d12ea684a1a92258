package mochat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/channels"
)

// errNoSocket: the Socket.IO server could not be reached; serve falls back
// to HTTP polling for this round.
var errNoSocket = errors.New("mochat: Socket.IO unavailable")

// pushEventBuffer bounds the events read but not yet handled; past it the
// socket reader waits (back-pressure on the server).
const pushEventBuffer = 256

// servePush runs one round over Socket.IO: cold-start every target over
// HTTP as in polling mode, connect, subscribe the sessions (from their
// saved cursors: the server answers with what was missed) and panels, then
// handle pushed events until the socket or ctx ends.
func (c *Channel) servePush(ctx context.Context, in channels.Inbox, up func()) error {
	u, err := sioURL(c.cfg.SocketURL, c.cfg.SocketPath)
	if err != nil {
		return channels.Fatal(fmt.Errorf("mochat: %w", err))
	}
	sessions, panels, err := c.allTargets(ctx)
	if err != nil {
		return err
	}
	coldStart := func(kind, id string) error { return c.coldStart(ctx, in, kind, id) }
	if err := eachTarget(sessions, panels, coldStart); err != nil {
		return err
	}

	dctx, cancel := context.WithTimeout(ctx, time.Duration(c.cfg.SocketConnectTimeoutMs)*time.Millisecond)
	conn, err := dialSIO(dctx, u, nil, map[string]string{"token": c.cfg.ClawToken})
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		var refused *errSIORefused
		if errors.As(err, &refused) {
			return channels.Fatal(fmt.Errorf("mochat: the Socket.IO server rejected clawToken: %w", err))
		}
		return fmt.Errorf("%w: %w", errNoSocket, err)
	}

	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	events := make(chan sioEvent, pushEventBuffer)
	readErr := make(chan error, 1)
	wg.Go(func() {
		readErr <- conn.read(rctx, func(ev sioEvent) error {
			select {
			case events <- ev:
			case <-rctx.Done():
			}
			return nil
		})
	})

	if err := c.subscribe(ctx, conn, in, sessions, panels); err != nil {
		return err
	}
	up()
	c.log.Info("mochat: connected over Socket.IO", "sessions", len(sessions), "panels", len(panels))
	rediscover, stopTicks := c.rediscovery()
	defer stopTicks()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-readErr:
			if err == nil {
				return nil
			}
			return err
		case ev := <-events:
			if err := c.pushed(ctx, in, ev); err != nil {
				return err
			}
		case <-rediscover:
			s, p, err := c.allTargets(ctx)
			if err != nil {
				return err
			}
			newS, newP := without(s, sessions), without(p, panels)
			if err := eachTarget(newS, newP, coldStart); err != nil {
				return err
			}
			if err := c.subscribe(ctx, conn, in, newS, newP); err != nil {
				return err
			}
			sessions, panels = append(sessions, newS...), append(panels, newP...)
		}
	}
}

func without(list, known []string) []string {
	var out []string
	for _, v := range list {
		if !slices.Contains(known, v) {
			out = append(out, v)
		}
	}
	return out
}

// ack is the answer of a Mochat Socket.IO call.
type ack struct {
	Result  bool            `json:"result"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (c *Channel) callAck(ctx context.Context, conn *sioConn, name string, payload any) (ack, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	args, err := conn.call(cctx, name, payload)
	if err != nil {
		return ack{}, err
	}
	var a ack
	if len(args) == 0 || json.Unmarshal(args[0], &a) != nil {
		return ack{}, fmt.Errorf("mochat: socket.io %s: unexpected answer", name)
	}
	if !a.Result {
		return ack{}, fmt.Errorf("mochat: socket.io %s refused: %s", name, a.Message)
	}
	return a, nil
}

// subscribe asks for the events of sessions (from their saved cursors)
// and panels, and handles the events the session subscription returns.
func (c *Channel) subscribe(ctx context.Context, conn *sioConn, in channels.Inbox, sessions, panels []string) error {
	if len(sessions) > 0 {
		cursors := map[string]int64{}
		for _, id := range sessions {
			cursors[id], _ = c.state.get(id)
		}
		a, err := c.callAck(ctx, conn, "com.claw.im.subscribeSessions",
			map[string]any{"sessionIds": sessions, "cursors": cursors, "limit": c.cfg.WatchLimit})
		if err != nil {
			return err
		}
		var list []json.RawMessage
		var wrapped struct {
			Sessions []json.RawMessage `json:"sessions"`
		}
		switch {
		case json.Unmarshal(a.Data, &list) == nil:
		case json.Unmarshal(a.Data, &wrapped) == nil && wrapped.Sessions != nil:
			list = wrapped.Sessions
		case len(a.Data) > 0 && string(a.Data) != "null":
			list = []json.RawMessage{a.Data}
		}
		for _, p := range list {
			if err := c.sessionEvents(ctx, in, p); err != nil {
				return err
			}
		}
	}
	if len(panels) > 0 {
		if _, err := c.callAck(ctx, conn, "com.claw.im.subscribePanels", map[string]any{"panelIds": panels}); err != nil {
			return err
		}
	}
	return nil
}

// pushed handles one event the server emitted.
func (c *Channel) pushed(ctx context.Context, in channels.Inbox, ev sioEvent) error {
	for _, arg := range ev.Args {
		var err error
		switch ev.Name {
		case "claw.session.events":
			err = c.sessionEvents(ctx, in, arg)
		case "claw.panel.events":
			err = c.panelEvents(ctx, in, arg)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// pushPayload is a claw.*.events payload: the watch answer of one session
// or panel.
type pushPayload struct {
	SessionID string `json:"sessionId"`
	PanelID   string `json:"panelId"`
	watchAnswer
}

// sessionEvents handles a session's events and then moves its cursor on.
func (c *Channel) sessionEvents(ctx context.Context, in channels.Inbox, raw json.RawMessage) error {
	var p pushPayload
	if err := json.Unmarshal(raw, &p); err != nil || p.SessionID == "" {
		c.log.Warn("mochat: unreadable session event skipped")
		return nil
	}
	cursor, _ := c.state.get(p.SessionID)
	next := cursorOf(p.watchAnswer, cursor)
	for _, ev := range p.Events {
		seq, _ := ev.Seq.Int64()
		next = max(next, seq)
		if ev.Type != "" && ev.Type != "message.add" {
			continue
		}
		var m message
		if err := json.Unmarshal(ev.Payload, &m); err != nil {
			c.log.Warn("mochat: unreadable message skipped", "session", p.SessionID, "seq", ev.Seq.String(), "err", err)
			continue
		}
		if err := c.handle(ctx, in, "session", p.SessionID, m, ""); err != nil {
			return err
		}
	}
	c.saveCursor(p.SessionID, next)
	return nil
}

// panelEvents handles a panel's events and saves its newest message.
func (c *Channel) panelEvents(ctx context.Context, in channels.Inbox, raw json.RawMessage) error {
	var p pushPayload
	if err := json.Unmarshal(raw, &p); err != nil {
		c.log.Warn("mochat: unreadable panel event skipped")
		return nil
	}
	id := p.PanelID
	if id == "" {
		id = p.SessionID
	}
	if id == "" {
		return nil
	}
	var last []message
	for _, ev := range p.Events {
		if ev.Type != "" && ev.Type != "message.add" {
			continue
		}
		var m message
		if err := json.Unmarshal(ev.Payload, &m); err != nil {
			c.log.Warn("mochat: unreadable panel message skipped", "panel", id, "err", err)
			continue
		}
		if m.GroupID == "" {
			m.GroupID = c.groupOf(id)
		}
		if err := c.handle(ctx, in, "panel", id, m, m.GroupID); err != nil {
			return err
		}
		last = []message{m}
	}
	c.markPanel(id, last)
	return nil
}
