package mochat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/nanobot-go/nanobot/channels/kit"
)

// A small Socket.IO v5 client (Engine.IO v4 over a WebSocket, the JSON
// parser, the default namespace): enough for Mochat's push mode, which
// needs a CONNECT with an auth object, events from the server, and
// emits with acknowledgements. Engine.IO heartbeats are answered here;
// HTTP long-polling and binary packets are not spoken.

// sioEvent is one event the server emitted: its name and arguments.
type sioEvent struct {
	Name string
	Args []json.RawMessage
}

// sioConn is one connected socket. call and close are safe for concurrent
// use; read is the owner's alone and must run for calls to be answered.
type sioConn struct {
	ws           *websocket.Conn
	pingInterval time.Duration
	pingTimeout  time.Duration

	acks kit.Waiters[int, []json.RawMessage] // ack id -> the call waiting for it

	mu     sync.Mutex
	nextID int
	done   chan struct{} // closed when read returns
	err    error
}

// errSIORefused is a CONNECT the server refused (Socket.IO CONNECT_ERROR);
// the message is the server's.
type errSIORefused struct{ msg string }

func (e *errSIORefused) Error() string { return "mochat: socket.io connection refused: " + e.msg }

// sioURL is the WebSocket URL of a Socket.IO server at base with path
// (default /socket.io).
func sioURL(base, path string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("socketUrl %q: want http(s):// or ws(s)://host", base)
	}
	switch u.Scheme {
	case "http", "ws":
		u.Scheme = "ws"
	case "https", "wss":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("socketUrl %q: want http(s):// or ws(s)://host", base)
	}
	path = strings.Trim(strings.TrimSpace(path), "/")
	if path == "" {
		path = "socket.io"
	}
	u.Path = "/" + path + "/"
	u.RawQuery = url.Values{"EIO": {"4"}, "transport": {"websocket"}}.Encode()
	return u.String(), nil
}

// dialSIO opens the socket and connects to the default namespace with
// auth; it returns when the server accepted the CONNECT.
func dialSIO(ctx context.Context, rawURL string, hc *http.Client, auth any) (*sioConn, error) {
	ws, _, err := websocket.Dial(ctx, rawURL, &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		return nil, fmt.Errorf("mochat: socket.io dial: %w", err)
	}
	ws.SetReadLimit(8 << 20)
	c := &sioConn{ws: ws, done: make(chan struct{})}
	if err := c.handshake(ctx, auth); err != nil {
		ws.Close(websocket.StatusNormalClosure, "")
		return nil, err
	}
	return c, nil
}

func (c *sioConn) handshake(ctx context.Context, auth any) error {
	_, b, err := c.ws.Read(ctx)
	if err != nil {
		return fmt.Errorf("mochat: socket.io open: %w", err)
	}
	var open struct {
		SID          string `json:"sid"`
		PingInterval int    `json:"pingInterval"`
		PingTimeout  int    `json:"pingTimeout"`
	}
	if len(b) == 0 || b[0] != '0' || json.Unmarshal(b[1:], &open) != nil {
		return fmt.Errorf("mochat: socket.io open: unexpected first packet %.40q", b)
	}
	c.pingInterval = time.Duration(open.PingInterval) * time.Millisecond
	c.pingTimeout = time.Duration(open.PingTimeout) * time.Millisecond
	a, err := json.Marshal(auth)
	if err != nil {
		return err
	}
	if err := c.write(ctx, "40"+string(a)); err != nil {
		return fmt.Errorf("mochat: socket.io connect: %w", err)
	}
	for {
		_, b, err := c.ws.Read(ctx)
		if err != nil {
			return fmt.Errorf("mochat: socket.io connect: %w", err)
		}
		s := string(b)
		switch {
		case s == "2":
			if err := c.write(ctx, "3"); err != nil {
				return err
			}
		case strings.HasPrefix(s, "40"):
			return nil
		case strings.HasPrefix(s, "44"):
			var e struct {
				Message string `json:"message"`
			}
			_ = json.Unmarshal([]byte(s[2:]), &e)
			if e.Message == "" {
				e.Message = s[2:]
			}
			return &errSIORefused{msg: e.Message}
		}
	}
}

func (c *sioConn) write(ctx context.Context, s string) error {
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return c.ws.Write(wctx, websocket.MessageText, []byte(s))
}

// read receives packets until the connection ends or ctx does, answering
// pings, resolving acks and passing events to onEvent (on this goroutine,
// in order). A server silent for longer than pingInterval+pingTimeout is
// taken as dead.
func (c *sioConn) read(ctx context.Context, onEvent func(sioEvent) error) (err error) {
	defer func() {
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		close(c.done)
		c.ws.Close(websocket.StatusNormalClosure, "")
	}()
	silence := c.pingInterval + c.pingTimeout
	if silence <= 0 {
		silence = 45 * time.Second
	}
	for {
		rctx, cancel := context.WithTimeout(ctx, silence)
		_, b, err := c.ws.Read(rctx)
		timedOut := rctx.Err() != nil && ctx.Err() == nil
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if timedOut {
				return fmt.Errorf("mochat: socket.io: no ping from the server for %s; the connection is dead", silence)
			}
			return fmt.Errorf("mochat: socket.io read: %w", err)
		}
		s := string(b)
		switch {
		case s == "2":
			if err := c.write(ctx, "3"); err != nil {
				return fmt.Errorf("mochat: socket.io pong: %w", err)
			}
		case s == "1" || strings.HasPrefix(s, "41"):
			return errors.New("mochat: socket.io: the server closed the session")
		case strings.HasPrefix(s, "42"):
			var args []json.RawMessage
			if err := json.Unmarshal([]byte(skipDigits(s[2:])), &args); err != nil || len(args) == 0 {
				continue
			}
			var name string
			if json.Unmarshal(args[0], &name) != nil {
				continue
			}
			if err := onEvent(sioEvent{Name: name, Args: args[1:]}); err != nil {
				return err
			}
		case strings.HasPrefix(s, "43"):
			rest := s[2:]
			digits := len(rest) - len(skipDigits(rest))
			id, err := strconv.Atoi(rest[:digits])
			if err != nil {
				continue
			}
			var args []json.RawMessage
			_ = json.Unmarshal([]byte(rest[digits:]), &args)
			c.acks.Deliver(id, args)
		}
	}
}

func skipDigits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[i:]
}

// call emits an event with an acknowledgement and returns the server's
// ack arguments. read must be running.
func (c *sioConn) call(ctx context.Context, name string, payload any) ([]json.RawMessage, error) {
	b, err := json.Marshal([]any{name, payload})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	ch, forget, _ := c.acks.Wait(id) // a fresh id is never taken
	defer forget()
	if err := c.write(ctx, "42"+strconv.Itoa(id)+string(b)); err != nil {
		return nil, fmt.Errorf("mochat: socket.io emit %s: %w", name, err)
	}
	select {
	case args := <-ch:
		return args, nil
	case <-c.done:
		c.mu.Lock()
		err := c.err
		c.mu.Unlock()
		if err == nil {
			err = errors.New("connection closed")
		}
		return nil, fmt.Errorf("mochat: socket.io %s: no answer: %w", name, err)
	case <-ctx.Done():
		return nil, fmt.Errorf("mochat: socket.io %s: no answer: %w", name, ctx.Err())
	}
}
