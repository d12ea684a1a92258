package wecom

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
)

// Commands.
const (
	cmdSubscribe = "aibot_subscribe"
	cmdPing      = "ping"
	cmdCallback  = "aibot_msg_callback"
	cmdEvent     = "aibot_event_callback"
	cmdRespond   = "aibot_respond_msg"
	cmdWelcome   = "aibot_respond_welcome_msg"
	cmdSend      = "aibot_send_msg"
)

// frame is one frame in either direction; answers to the bot's frames
// carry errcode and errmsg instead of a cmd.
type frame struct {
	Cmd     string `json:"cmd,omitempty"`
	Headers struct {
		ReqID string `json:"req_id"`
	} `json:"headers"`
	Body    json.RawMessage `json:"body,omitempty"`
	ErrCode *int            `json:"errcode,omitempty"`
	ErrMsg  string          `json:"errmsg,omitempty"`
}

// conn is one live websocket with the bookkeeping of what waits for an
// answer.
type conn struct {
	ws      *websocket.Conn
	wmu     sync.Mutex                 // one writer at a time
	waiting kit.Waiters[string, frame] // req_id -> the call waiting for its answer
	missed  atomic.Int32               // pings without an answer
}

func newReqID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

func (k *conn) write(ctx context.Context, f any) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	k.wmu.Lock()
	defer k.wmu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return k.ws.Write(wctx, websocket.MessageText, b)
}

// request writes a frame and waits for WeCom's answer to its req_id.
func (k *conn) request(ctx context.Context, cmd, reqID string, body any, timeout time.Duration) (frame, error) {
	ch, forget, ok := k.waiting.Wait(reqID)
	if !ok {
		return frame{}, fmt.Errorf("wecom: %s: another frame for this req_id is waiting", cmd)
	}
	defer forget()
	f := map[string]any{"cmd": cmd, "headers": map[string]string{"req_id": reqID}}
	if body != nil {
		f["body"] = body
	}
	if err := k.write(ctx, f); err != nil {
		return frame{}, fmt.Errorf("wecom: %s: %w", cmd, err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case a := <-ch:
		if a.ErrCode != nil && *a.ErrCode != 0 {
			return a, &kit.APIError{Op: "wecom: " + cmd, Code: fmt.Sprint(*a.ErrCode), Message: a.ErrMsg}
		}
		return a, nil
	case <-t.C:
		return frame{}, fmt.Errorf("wecom: %s: no answer within %s", cmd, timeout)
	case <-ctx.Done():
		return frame{}, ctx.Err()
	}
}

var errTakenOver = errors.New("wecom: another connection for this bot took over (disconnected_event); not reconnecting, so that the two do not keep replacing each other")

// Run connects and delivers messages to in until ctx ends; it returns nil
// then. It reconnects with backoff after failures; a rejected secret or
// another connection taking over ends it.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	loop := &channels.Loop{Name: "wecom", Log: c.log, Health: &c.health, Redact: c.redact.Error, Min: c.backoffMin, Max: c.backoffMax}
	err := loop.Run(ctx, func(ctx context.Context, up func()) error { return c.connect(ctx, in, up) })
	c.http.CloseIdleConnections()
	return err
}

// readLimit caps one frame.
const readLimit = 4 << 20

// connect is one connection's life (a kit.Session).
func (c *Channel) connect(ctx context.Context, in channels.Inbox, up func()) error {
	ws, _, err := websocket.Dial(ctx, c.cfg.WSURL, &websocket.DialOptions{HTTPClient: c.http})
	if err != nil {
		return fmt.Errorf("wecom: connecting: %s", c.redact.Error(err))
	}
	defer ws.CloseNow()
	ws.SetReadLimit(readLimit)
	k := &conn{ws: ws}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	frames := make(chan frame, 64)
	go func() { cancel(c.read(ctx, k, frames)) }()

	sub := newReqID(cmdSubscribe)
	if _, err := k.request(ctx, cmdSubscribe, sub, map[string]string{"bot_id": c.cfg.BotID, "secret": c.cfg.Secret}, 15*time.Second); err != nil {
		var ae *kit.APIError
		if errors.As(err, &ae) {
			return channels.Fatal(fmt.Errorf("wecom: WeCom rejected botId/secret: %s", c.redact.Error(err)))
		}
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return cause
		}
		return err
	}
	defer channels.Publish(&c.mu, &c.conn, k)()
	up()

	beat := time.NewTicker(c.heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			cause := context.Cause(ctx)
			if errors.Is(cause, context.Canceled) || cause == nil {
				_ = ws.Close(websocket.StatusNormalClosure, "")
				return nil
			}
			return cause
		case <-beat.C:
			if k.missed.Load() >= 2 {
				return errors.New("wecom: two pings without an answer; the connection is dead")
			}
			k.missed.Add(1)
			if err := k.write(ctx, map[string]any{"cmd": cmdPing, "headers": map[string]string{"req_id": newReqID(cmdPing)}}); err != nil {
				return fmt.Errorf("wecom: ping: %s", c.redact.Error(err))
			}
		case f := <-frames:
			if err := c.handle(ctx, in, k, f); err != nil {
				return err
			}
		}
	}
}

// read passes frames on until the connection fails; answers to the bot's
// own frames are matched here, so a slow handler cannot hold them up.
func (c *Channel) read(ctx context.Context, k *conn, frames chan<- frame) error {
	for {
		_, data, err := k.ws.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return context.Canceled
			}
			return fmt.Errorf("wecom: connection: %s", c.redact.Error(err))
		}
		var f frame
		if err := json.Unmarshal(data, &f); err != nil {
			c.log.Warn("wecom: unreadable frame skipped", "bytes", len(data), "err", err)
			continue
		}
		if f.Cmd == "" {
			if len(f.Headers.ReqID) > len(cmdPing) && f.Headers.ReqID[:len(cmdPing)+1] == cmdPing+"_" {
				k.missed.Store(0)
				continue
			}
			if !k.waiting.Deliver(f.Headers.ReqID, f) {
				c.log.Debug("wecom: answer for nothing waiting", "req_id", f.Headers.ReqID)
			}
			continue
		}
		select {
		case frames <- f:
		case <-ctx.Done():
			return context.Canceled
		}
	}
}
