package qq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/coder/websocket"

	"github.com/nanobot-go/nanobot/channels"
)

// Gateway opcodes.
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opResume         = 6
	opReconnect      = 7
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatACK   = 11
)

// Intents the bot subscribes to: group @-messages and single chats
// (GROUP_AND_C2C_EVENT) and guild direct messages (DIRECT_MESSAGE).
const (
	IntentGroupAndC2C   = 1 << 25
	IntentDirectMessage = 1 << 12
	intents             = IntentGroupAndC2C | IntentDirectMessage
)

// frame is one gateway payload.
type frame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d,omitempty"`
	S  int64           `json:"s,omitempty"`
	T  string          `json:"t,omitempty"`
	ID string          `json:"id,omitempty"`
}

// gwSession is what Resume needs; gen changes with every fresh Identify so
// that events of an old session cannot move the new session's seq.
type gwSession struct {
	id  string
	seq int64 // the last dispatch handled (delivered, skipped or denied)
	gen int
}

// event is one dispatch queued for the worker.
type event struct {
	gen  int
	conn int // the connection it came on (Channel.conns)
	seq  int64
	kind string
	data json.RawMessage
}

// readLimit caps one gateway frame.
const readLimit = 4 << 20

// helloTimeout bounds the wait for Hello and READY/RESUMED.
const helloTimeout = 30 * time.Second

var (
	errReconnect      = errors.New("the platform asked for a reconnect (op 7)")
	errInvalidSession = errors.New("the platform invalidated the session (op 9); identifying afresh")
	errZombie         = errors.New("heartbeat not acknowledged; the connection is dead")
	errRedeliver      = errors.New("a message could not be handed to the gateway; reconnecting so that QQ delivers it again")
)

// connect is one gateway connection's life (a kit.Session): it identifies
// or resumes, heartbeats, and queues dispatches for the worker until the
// connection ends.
func (c *Channel) connect(ctx context.Context, up func(), events chan<- event) error {
	tok, err := c.tokens.Get(ctx)
	if err != nil {
		if credentialsRejected(err) {
			return channels.Fatal(fmt.Errorf("qq: bots.qq.com rejected appId/secret: %w", err))
		}
		return err
	}
	var gw struct {
		URL string `json:"url"`
	}
	if err := c.call(ctx, http.MethodGet, "/gateway/bot", nil, &gw); err != nil {
		return fmt.Errorf("qq: gateway address: %w", err)
	}
	if tok, err = c.tokens.Get(ctx); err != nil { // refreshed if the platform refused the old one
		return err
	}
	if u, err := url.Parse(gw.URL); err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return fmt.Errorf("qq: gateway address %q is not a websocket URL", gw.URL)
	}
	conn, resp, err := websocket.Dial(ctx, gw.URL, &websocket.DialOptions{HTTPClient: c.http})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return fmt.Errorf("qq: gateway dial: %w", err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(readLimit)

	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c.mu.Lock()
	c.conns++
	connID := c.conns
	c.live = cancel
	c.mu.Unlock()
	hello, err := c.readHello(sctx, conn)
	if err != nil {
		return err
	}
	if err := c.greet(sctx, conn, tok); err != nil {
		return err
	}
	acked := make(chan struct{}, 1)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		c.heartbeat(sctx, conn, hello, acked, cancel)
	}()
	defer func() {
		cancel(nil)
		<-hbDone
	}()
	err = c.read(sctx, conn, connID, up, events, acked)
	if cause := context.Cause(sctx); cause != nil && ctx.Err() == nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	c.closeStatus(err, tok)
	if errors.Is(err, errReconnect) {
		_ = conn.Close(websocket.StatusNormalClosure, "reconnecting")
	}
	return fatalClose(err)
}

// readHello waits for op 10 and returns the heartbeat interval.
func (c *Channel) readHello(ctx context.Context, conn *websocket.Conn) (time.Duration, error) {
	hctx, cancel := context.WithTimeout(ctx, helloTimeout)
	defer cancel()
	f, err := readFrame(hctx, conn)
	if err != nil {
		return 0, fmt.Errorf("qq: waiting for Hello: %w", err)
	}
	if f.Op != opHello {
		return 0, fmt.Errorf("qq: expected Hello (op 10), got op %d", f.Op)
	}
	var d struct {
		HeartbeatInterval int64 `json:"heartbeat_interval"`
	}
	if err := json.Unmarshal(f.D, &d); err != nil || d.HeartbeatInterval <= 0 {
		return 0, fmt.Errorf("qq: Hello without a heartbeat interval: %s", string(f.D))
	}
	return time.Duration(d.HeartbeatInterval) * time.Millisecond, nil
}

// greet resumes the previous session when there is one, else identifies.
func (c *Channel) greet(ctx context.Context, conn *websocket.Conn, tok string) error {
	c.mu.Lock()
	s := c.session
	c.mu.Unlock()
	if s.id != "" {
		c.log.Debug("qq: resuming the session", "seq", s.seq)
		return writeFrame(ctx, conn, opResume, map[string]any{"token": "QQBot " + tok, "session_id": s.id, "seq": s.seq})
	}
	return writeFrame(ctx, conn, opIdentify, map[string]any{
		"token":      "QQBot " + tok,
		"intents":    intents,
		"shard":      []int{0, 1},
		"properties": map[string]string{"$os": "linux", "$browser": "nanobot", "$device": "nanobot"},
	})
}

// heartbeat sends op 1 with the last handled seq every interval. Two
// heartbeats in a row without an ACK mean the connection is dead.
func (c *Channel) heartbeat(ctx context.Context, conn *websocket.Conn, every time.Duration, acked <-chan struct{}, fail context.CancelCauseFunc) {
	t := time.NewTicker(every)
	defer t.Stop()
	unanswered := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-acked:
			unanswered = 0
			continue
		case <-t.C:
		}
		if unanswered >= 2 {
			fail(errZombie)
			return
		}
		if err := c.sendHeartbeat(ctx, conn); err != nil {
			fail(fmt.Errorf("qq: heartbeat: %w", err))
			return
		}
		unanswered++
	}
}

func (c *Channel) sendHeartbeat(ctx context.Context, conn *websocket.Conn) error {
	c.mu.Lock()
	seq := c.session.seq
	c.mu.Unlock()
	var d any // null before the first dispatch
	if seq > 0 {
		d = seq
	}
	return writeFrame(ctx, conn, opHeartbeat, d)
}

// read handles frames until the connection ends.
func (c *Channel) read(ctx context.Context, conn *websocket.Conn, connID int, up func(), events chan<- event, acked chan<- struct{}) error {
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return fmt.Errorf("qq: gateway read: %w", err)
		}
		var f frame
		if err := json.Unmarshal(data, &f); err != nil {
			c.log.Warn("qq: malformed gateway frame skipped", "err", err, "bytes", len(data))
			continue
		}
		switch f.Op {
		case opDispatch:
			if err := c.dispatch(ctx, f, connID, up, events); err != nil {
				return err
			}
		case opHeartbeatACK:
			select {
			case acked <- struct{}{}:
			default:
			}
		case opHeartbeat: // the platform asks for one now
			if err := c.sendHeartbeat(ctx, conn); err != nil {
				return fmt.Errorf("qq: heartbeat: %w", err)
			}
		case opReconnect:
			c.log.Info("qq: the platform asked for a reconnect")
			return errReconnect
		case opInvalidSession:
			c.mu.Lock()
			c.session = gwSession{gen: c.session.gen + 1}
			c.mu.Unlock()
			return errInvalidSession
		default:
			c.log.Debug("qq: gateway frame ignored", "op", f.Op)
		}
	}
}

// dispatch handles op 0: READY and RESUMED here, everything else in order
// by the worker.
func (c *Channel) dispatch(ctx context.Context, f frame, connID int, up func(), events chan<- event) error {
	switch f.T {
	case "READY":
		var d struct {
			SessionID string `json:"session_id"`
			User      struct {
				ID       string `json:"id"`
				Username string `json:"username"`
			} `json:"user"`
		}
		if err := json.Unmarshal(f.D, &d); err != nil || d.SessionID == "" {
			return fmt.Errorf("qq: READY without a session id: %v", err)
		}
		c.mu.Lock()
		c.session = gwSession{id: d.SessionID, seq: f.S, gen: c.session.gen + 1}
		c.botID = d.User.ID
		c.mu.Unlock()
		c.log.Info("qq: connected", "bot", d.User.Username)
		up()
		return nil
	case "RESUMED":
		c.log.Info("qq: session resumed")
		up()
		return nil
	}
	c.mu.Lock()
	gen := c.session.gen
	c.mu.Unlock()
	select {
	case events <- event{gen: gen, conn: connID, seq: f.S, kind: f.T, data: f.D}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// handled records that the dispatch ev is done with, so heartbeats and
// Resume report it.
func (c *Channel) handled(ev event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.gen == c.session.gen && ev.seq > c.session.seq {
		c.session.seq = ev.seq
	}
}

// redeliver gives up on the rest of connection connID: its queued events
// are dropped unhandled and the connection is closed, so that the Resume
// of the next one names the seq before ev and QQ replays ev and what
// followed it.
func (c *Channel) redeliver(connID int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.abandoned = connID
	if c.conns == connID && c.live != nil {
		c.live(errRedeliver)
	}
}

// abandonedConn reports whether events of connID are to be dropped.
func (c *Channel) abandonedConn(connID int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return connID <= c.abandoned
}

// closeStatus reacts to the platform's close code: a rejected token is
// dropped, a session that cannot be resumed is forgotten. Codes that
// retrying cannot fix are turned into kit.Fatal by fatalClose.
func (c *Channel) closeStatus(err error, tok string) {
	switch websocket.CloseStatus(err) {
	case 4004: // invalid token
		c.tokens.Invalidate(tok)
	case 4006, 4007: // session id or seq invalid: identify afresh
		c.mu.Lock()
		c.session = gwSession{gen: c.session.gen + 1}
		c.mu.Unlock()
	}
}

// fatalClose reports close codes after which reconnecting cannot help.
func fatalClose(err error) error {
	switch code := websocket.CloseStatus(err); code {
	case 4010, 4011, 4012:
		return channels.Fatal(fmt.Errorf("qq: the gateway refused the connection (close %d: shard or version); %w", code, err))
	case 4013, 4014:
		return channels.Fatal(fmt.Errorf("qq: the bot lacks permission for the message intents (close %d); check the bot's 权限 on q.qq.com: %w", code, err))
	case 4914:
		return channels.Fatal(fmt.Errorf("qq: the bot is offline or limited to the sandbox (close 4914): %w", err))
	case 4915:
		return channels.Fatal(fmt.Errorf("qq: the bot is banned (close 4915): %w", err))
	}
	return err
}

func readFrame(ctx context.Context, conn *websocket.Conn) (frame, error) {
	_, data, err := conn.Read(ctx)
	if err != nil {
		return frame{}, err
	}
	var f frame
	if err := json.Unmarshal(data, &f); err != nil {
		return frame{}, fmt.Errorf("malformed frame: %w", err)
	}
	return f, nil
}

func writeFrame(ctx context.Context, conn *websocket.Conn, op int, d any) error {
	b, err := json.Marshal(struct {
		Op int `json:"op"`
		D  any `json:"d"`
	}{op, d})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return conn.Write(wctx, websocket.MessageText, b)
}
