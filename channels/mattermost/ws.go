package mattermost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/nanobot-go/nanobot/channels"
)

// wsConn is one authenticated socket; its actions carry increasing seqs.
// Write is safe for concurrent use (coder/websocket allows concurrent
// writes); Read is the session's alone.
type wsConn struct {
	c    *websocket.Conn
	seq  atomic.Int64
	last atomic.Int64 // unix nanos of the last frame received
}

// action sends one client action and returns its seq.
func (w *wsConn) action(ctx context.Context, name string, data any) (int64, error) {
	seq := w.seq.Add(1)
	b, err := json.Marshal(map[string]any{"seq": seq, "action": name, "data": data})
	if err != nil {
		return 0, err
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return seq, w.c.Write(wctx, websocket.MessageText, b)
}

// frame is what the server sends: an event, or the response to an action.
type frame struct {
	Event     string          `json:"event"`
	Data      json.RawMessage `json:"data"`
	Seq       *int64          `json:"seq"`
	Status    string          `json:"status"`
	SeqReply  int64           `json:"seq_reply"`
	Error     json.RawMessage `json:"error"`
	Broadcast struct {
		ChannelID string `json:"channel_id"`
	} `json:"broadcast"`
}

// readLimit caps one websocket frame.
const readLimit = 4 << 20

// authTimeout bounds the wait for the answer to authentication_challenge.
const authTimeout = 30 * time.Second

var errDead = errors.New("mattermost: no frame from the server for two ping intervals; the connection is dead")

// connect is one connection's life (a channels.Session).
func (c *Channel) connect(ctx context.Context, up func(), events chan<- []byte) error {
	if err := c.fetchMe(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	rp := c.resume
	c.mu.Unlock()
	target := c.wsURL
	if rp.connID != "" {
		q := url.Values{"connection_id": {rp.connID}, "sequence_number": {strconv.FormatInt(rp.next, 10)}}
		target += "?" + q.Encode()
	}
	conn, resp, err := websocket.Dial(ctx, target, &websocket.DialOptions{HTTPClient: c.http})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return fmt.Errorf("mattermost: websocket dial: %s", c.redact.Error(err))
	}
	defer conn.CloseNow()
	conn.SetReadLimit(readLimit)
	ws := &wsConn{c: conn}
	ws.last.Store(time.Now().UnixNano())

	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	authSeq, err := ws.action(sctx, "authentication_challenge", map[string]string{"token": c.cfg.Token})
	if err != nil {
		return fmt.Errorf("mattermost: authentication_challenge: %w", err)
	}
	if err := c.awaitAuth(sctx, ws, authSeq, events); err != nil {
		return err
	}
	defer channels.Publish(&c.mu, &c.conn, ws)()
	c.log.Info("mattermost: connected", "bot", c.self().Username, "resumed", rp.connID != "")
	up()

	var wg sync.WaitGroup
	wg.Go(func() { c.keepAlive(sctx, ws, cancel) })
	defer wg.Wait()
	defer cancel(nil)
	for {
		f, err := c.read(sctx, ws)
		if err != nil {
			if cause := context.Cause(sctx); cause != nil && ctx.Err() == nil && !errors.Is(cause, context.Canceled) {
				return cause
			}
			return fmt.Errorf("mattermost: websocket read: %w", err)
		}
		if f == nil {
			continue
		}
		if err := c.onFrame(sctx, f, events); err != nil {
			return err
		}
	}
}

// awaitAuth reads until the server answered the authentication challenge.
// Events may come first; they are handled as usual.
func (c *Channel) awaitAuth(ctx context.Context, ws *wsConn, seq int64, events chan<- []byte) error {
	actx, cancel := context.WithTimeout(ctx, authTimeout)
	defer cancel()
	for {
		f, err := c.read(actx, ws)
		if err != nil {
			if websocket.CloseStatus(err) == websocket.StatusPolicyViolation {
				return channels.Fatal(fmt.Errorf("%w (the websocket refused it)", ErrUnauthorized))
			}
			return fmt.Errorf("mattermost: waiting for the authentication answer: %w", err)
		}
		if f == nil {
			continue
		}
		if f.Event == "" && f.SeqReply == seq {
			if f.Status != "OK" {
				return channels.Fatal(fmt.Errorf("%w (authentication_challenge: %s %s)", ErrUnauthorized, f.Status, c.redact.String(string(f.Error))))
			}
			return nil
		}
		if err := c.onFrame(ctx, f, events); err != nil {
			return err
		}
	}
}

// read returns the next frame; nil for one it could not decode (logged).
func (c *Channel) read(ctx context.Context, ws *wsConn) (*frame, error) {
	_, data, err := ws.c.Read(ctx)
	if err != nil {
		return nil, err
	}
	ws.last.Store(time.Now().UnixNano())
	var f frame
	if err := json.Unmarshal(data, &f); err != nil {
		c.log.Warn("mattermost: malformed websocket frame skipped", "err", err, "bytes", len(data))
		return nil, nil
	}
	return &f, nil
}

// onFrame tracks the event sequence and queues posts for the worker.
func (c *Channel) onFrame(ctx context.Context, f *frame, events chan<- []byte) error {
	if f.Event == "" {
		if f.Status != "" && f.Status != "OK" {
			c.log.Debug("mattermost: action failed", "seq_reply", f.SeqReply, "status", f.Status)
		}
		return nil // the answer to an action (ping, typing)
	}
	if f.Seq != nil {
		c.mu.Lock()
		if f.Event != "hello" && c.resume.connID != "" && *f.Seq != c.resume.next {
			c.log.Warn("mattermost: events missed", "expected_seq", c.resume.next, "got_seq", *f.Seq)
		}
		c.resume.next = *f.Seq + 1
		c.mu.Unlock()
	}
	switch f.Event {
	case "hello":
		var d struct {
			ConnectionID  string `json:"connection_id"`
			ServerVersion string `json:"server_version"`
		}
		_ = json.Unmarshal(f.Data, &d)
		c.mu.Lock()
		if c.resume.connID != "" && c.resume.connID != d.ConnectionID {
			c.log.Info("mattermost: new websocket connection; posts sent while disconnected are not replayed")
		}
		c.resume.connID = d.ConnectionID
		c.mu.Unlock()
		c.log.Debug("mattermost: hello", "server_version", d.ServerVersion)
	case "posted":
		select {
		case events <- f.Data:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// keepAlive pings every interval and ends the connection when nothing came
// back for two of them.
func (c *Channel) keepAlive(ctx context.Context, ws *wsConn, fail context.CancelCauseFunc) {
	channels.Every(ctx, c.pingEvery, func() bool {
		if time.Since(time.Unix(0, ws.last.Load())) > 2*c.pingEvery {
			fail(errDead)
			return false
		}
		if _, err := ws.action(ctx, "ping", nil); err != nil {
			fail(fmt.Errorf("mattermost: ping: %w", err))
			return false
		}
		return true
	})
}

// liveConn is the authenticated socket, or nil while reconnecting.
func (c *Channel) liveConn() *wsConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conn
}
