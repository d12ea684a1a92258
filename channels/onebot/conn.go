package onebot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
)

// readLimit caps one websocket frame (events carry base64 images at most
// as URLs, but forwarded-message cards can be large).
const readLimit = 16 << 20

// eventQueue is how many message events may wait for the worker; when it
// is full the reader waits (back-pressure).
const eventQueue = 256

// offerTimeout is how long a reverse connection waits to be taken by Run
// (which takes one connection at a time) before it is refused.
const offerTimeout = 10 * time.Second

// conn is one websocket connection to the implementation. call is safe for
// concurrent use; read is the session's alone.
type conn struct {
	ws       *websocket.Conn
	seq      atomic.Int64
	lastBeat atomic.Int64 // unix nanos of the last heartbeat event
	interval atomic.Int64 // the heartbeat interval it announced, in ns

	pending kit.Waiters[string, response] // echo -> the call waiting for it

	gone chan struct{} // closed when the reader stopped
	// released is closed when the session is done with the connection (the
	// reverse handler waits for it).
	released  chan struct{}
	closeOnce sync.Once
}

func newConn(ws *websocket.Conn) *conn {
	ws.SetReadLimit(readLimit)
	return &conn{ws: ws, gone: make(chan struct{}), released: make(chan struct{})}
}

// close ends the connection and releases it.
func (cn *conn) close() {
	cn.closeOnce.Do(func() {
		cn.ws.CloseNow()
		close(cn.released)
	})
}

// response is an action's answer.
type response struct {
	Status  string          `json:"status"`
	Retcode int             `json:"retcode"`
	Data    json.RawMessage `json:"data"`
	Message string          `json:"message"`
	Wording string          `json:"wording"`
	Echo    json.RawMessage `json:"echo"`
}

var errNotConnected = errors.New("onebot: not connected to the implementation")

// call sends an action and waits for the answer with its echo. A failed
// action (status "failed", retcode ≠ 0) is a *kit.APIError with the
// retcode as its Code.
func (cn *conn) call(ctx context.Context, action string, params any, timeout time.Duration) (json.RawMessage, error) {
	echo := "nb-" + strconv.FormatInt(cn.seq.Add(1), 10)
	select {
	case <-cn.gone:
		return nil, errNotConnected
	default:
	}
	ch, forget, _ := cn.pending.Wait(echo) // an echo is never used twice
	defer forget()
	if params == nil {
		params = struct{}{}
	}
	b, err := json.Marshal(map[string]any{"action": action, "params": params, "echo": echo})
	if err != nil {
		return nil, fmt.Errorf("onebot: %s: %w", action, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := cn.ws.Write(ctx, websocket.MessageText, b); err != nil {
		return nil, fmt.Errorf("onebot: %s: %w", action, err)
	}
	select {
	case r := <-ch:
		if r.Status == "failed" || r.Retcode != 0 {
			msg := r.Wording
			if msg == "" {
				msg = r.Message
			}
			return nil, &kit.APIError{Op: "onebot: " + action, Code: strconv.Itoa(r.Retcode), Message: msg}
		}
		return r.Data, nil
	case <-cn.gone:
		return nil, fmt.Errorf("onebot: %s: the connection closed before the answer", action)
	case <-ctx.Done():
		return nil, fmt.Errorf("onebot: %s: no answer: %w", action, ctx.Err())
	}
}

// envelope is what the reader looks at first: events carry post_type
// (and, for meta events, their type and heartbeat interval), action
// answers carry echo; a heartbeat's status is read by meta.
type envelope struct {
	PostType      string          `json:"post_type"`
	MetaEventType string          `json:"meta_event_type"`
	SubType       string          `json:"sub_type"`
	Interval      int64           `json:"interval"`
	Echo          json.RawMessage `json:"echo"`
}

// read runs until the connection ends: answers go to their callers,
// heartbeats are noted, message events go to events.
func (c *Channel) read(ctx context.Context, cn *conn, events chan<- []byte) error {
	err := func() error {
		for {
			_, b, err := cn.ws.Read(ctx)
			if err != nil {
				return err
			}
			var env envelope
			if err := json.Unmarshal(b, &env); err != nil {
				c.log.Warn("onebot: unreadable frame skipped", "bytes", len(b), "err", err)
				continue
			}
			switch env.PostType {
			case "":
				if len(env.Echo) == 0 {
					c.log.Warn("onebot: frame that is neither an event nor an answer skipped", "bytes", len(b))
					continue
				}
				var r response
				if err := json.Unmarshal(b, &r); err != nil {
					c.log.Warn("onebot: unreadable action answer skipped", "err", err)
					continue
				}
				echo, _ := strconv.Unquote(string(r.Echo))
				cn.pending.Deliver(echo, r)
			case "meta_event":
				c.meta(cn, env, b)
			case "message":
				select {
				case events <- b:
				case <-ctx.Done():
					return ctx.Err()
				}
			default:
				c.log.Debug("onebot: event ignored", "post_type", env.PostType)
			}
		}
	}()
	close(cn.gone)
	return err
}

// meta handles heartbeat and lifecycle events.
func (c *Channel) meta(cn *conn, env envelope, b []byte) {
	switch env.MetaEventType {
	case "heartbeat":
		cn.lastBeat.Store(time.Now().UnixNano())
		if env.Interval > 0 {
			cn.interval.Store(int64(time.Duration(env.Interval) * time.Millisecond))
		}
		var st struct {
			Status struct {
				Online *bool `json:"online"`
			} `json:"status"`
		}
		if json.Unmarshal(b, &st) == nil && st.Status.Online != nil && !*st.Status.Online {
			c.log.Warn("onebot: the implementation reports the QQ account offline")
		}
	case "lifecycle":
		c.log.Info("onebot: lifecycle event", "sub_type", env.SubType)
	default:
		c.log.Debug("onebot: meta event ignored", "meta_event_type", env.MetaEventType)
	}
}

// missedHeartbeats reports whether the implementation announced heartbeats
// and then fell silent for two and a half intervals.
func (cn *conn) missedHeartbeats(now time.Time) bool {
	iv := time.Duration(cn.interval.Load())
	if iv <= 0 {
		return false
	}
	return now.Sub(time.Unix(0, cn.lastBeat.Load())) > iv*5/2
}

var errMissedHeartbeats = errors.New("onebot: heartbeats stopped; the connection is considered dead")

// dial opens a forward connection.
func (c *Channel) dial(ctx context.Context) (*conn, error) {
	h := http.Header{}
	if c.cfg.AccessToken != "" {
		h.Set("Authorization", "Bearer "+c.cfg.AccessToken)
	}
	dctx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	ws, resp, err := websocket.Dial(dctx, c.cfg.URL, &websocket.DialOptions{HTTPHeader: h})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
			return nil, channels.Fatal(fmt.Errorf("%w (HTTP %d)", ErrUnauthorized, resp.StatusCode))
		}
		return nil, fmt.Errorf("onebot: dial %s: %s", c.cfg.URL, c.redact.Error(err))
	}
	return newConn(ws), nil
}

// Run connects (forward) or takes the implementation's connections
// (reverse) and delivers messages to in until ctx ends; it returns nil
// then. A rejected access token ends it early with a channels.FatalError.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	events := make(chan []byte, eventQueue)
	stop := channels.Work(ctx, events, func(ctx context.Context, b []byte) { c.handle(ctx, in, b) })
	var incom chan *conn
	if c.cfg.Mode == ModeReverse {
		incom = make(chan *conn)
		c.mu.Lock()
		c.incom = incom
		c.mu.Unlock()
	}
	loop := &channels.Loop{Name: "onebot", Log: c.log, Health: &c.health, Redact: c.redact.Error, Min: c.backoffMin, Max: c.backoffMax}
	err := loop.Run(ctx, func(ctx context.Context, up func()) error { return c.session(ctx, up, incom, events) })
	c.mu.Lock()
	c.incom = nil
	c.mu.Unlock()
	stop()
	c.http.CloseIdleConnections()
	return err
}

// session is one connection's life (a channels.Session).
func (c *Channel) session(ctx context.Context, up func(), incom chan *conn, events chan<- []byte) error {
	var cn *conn
	if incom == nil {
		var err error
		if cn, err = c.dial(ctx); err != nil {
			return err
		}
	} else {
		select {
		case cn = <-incom:
		case <-ctx.Done():
			return nil
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	readDone := make(chan error, 1)
	go func() { readDone <- c.read(sctx, cn, events) }()
	defer func() {
		cancel()
		cn.close()
		<-readDone
	}()
	// Actions may use the connection at once: the events read meanwhile
	// name the bot themselves (self_id).
	defer channels.Publish(&c.mu, &c.live, cn)()
	data, err := cn.call(sctx, "get_login_info", nil, c.callTimeout)
	if err != nil {
		return fmt.Errorf("onebot: get_login_info: %w", err)
	}
	var info struct {
		UserID   json.RawMessage `json:"user_id"`
		Nickname string          `json:"nickname"`
	}
	if err := json.Unmarshal(data, &info); err != nil || idOf(info.UserID) == "" {
		return fmt.Errorf("onebot: get_login_info answered without a user_id (%s)", strings.TrimSpace(string(data)))
	}
	c.mu.Lock()
	c.selfID = idOf(info.UserID)
	c.mu.Unlock()
	c.log.Info("onebot: connected", "self_id", idOf(info.UserID), "mode", c.cfg.Mode)
	up()
	tick := time.NewTicker(c.watchEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-readDone:
			readDone <- err // for the deferred wait
			if err == nil {
				err = errors.New("connection closed")
			}
			return fmt.Errorf("onebot: connection lost: %s", c.redact.Error(err))
		case now := <-tick.C:
			if cn.missedHeartbeats(now) {
				return errMissedHeartbeats
			}
		}
	}
}

// incoming reports whether Run takes reverse connections.
func (c *Channel) incoming() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.incom != nil
}

// liveConn is the connection actions go through, nil while down.
func (c *Channel) liveConn() *conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live
}

// WebhookHandler implements channels.WebhookHandler: the reverse websocket
// endpoint. The access token is checked before the upgrade (401); only the
// Universal role is taken (400 for API or Event clients); while Run is not
// running the answer is 503.
func (c *Channel) WebhookHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !c.tokenMatches(r) {
			c.log.Warn("onebot: reverse connection with a wrong or missing access token refused", "remote", r.RemoteAddr)
			http.Error(w, "wrong access token", http.StatusUnauthorized)
			return
		}
		if role := r.Header.Get("X-Client-Role"); role != "" && !strings.EqualFold(role, "Universal") {
			http.Error(w, "only the Universal client role is supported", http.StatusBadRequest)
			return
		}
		incom, ok := channels.Serving(w, &c.mu, &c.incom)
		if !ok {
			return
		}
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		cn := newConn(ws)
		t := time.NewTimer(offerTimeout)
		defer t.Stop()
		select {
		case incom <- cn:
		case <-t.C:
			ws.Close(websocket.StatusTryAgainLater, "another implementation is connected")
			return
		}
		c.log.Info("onebot: reverse connection taken", "x_self_id", r.Header.Get("X-Self-ID"), "remote", r.RemoteAddr)
		<-cn.released
	})
}

// idOf reads an id the implementation sent as a number or a string.
func idOf(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return ""
	}
	if s[0] == '"' {
		u, err := strconv.Unquote(s)
		if err != nil {
			return ""
		}
		return u
	}
	return s
}
