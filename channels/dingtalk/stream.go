package dingtalk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"

	"github.com/coder/websocket"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
)

// TopicBotMessage is the stream topic of messages sent to the robot.
const TopicBotMessage = "/v1.0/im/bot/messages/get"

// frame is one stream-mode message from the server.
type frame struct {
	SpecVersion string            `json:"specVersion"`
	Type        string            `json:"type"` // SYSTEM, EVENT, CALLBACK
	Headers     map[string]string `json:"headers"`
	Data        string            `json:"data"`
}

// ack answers a frame.
type ack struct {
	Code    int               `json:"code"`
	Headers map[string]string `json:"headers"`
	Message string            `json:"message"`
	Data    string            `json:"data"`
}

// Run connects with stream mode and delivers messages until ctx ends. It
// reconnects with backoff; rejected credentials end it.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	defer c.http.CloseIdleConnections()
	loop := &kit.Loop{Name: "dingtalk", Log: c.log, Health: &c.health, Redact: c.redact, Min: c.backoffMin, Max: c.backoffMax}
	return loop.Run(ctx, func(ctx context.Context, up func()) error { return c.session(ctx, in, up) })
}

// open asks the gateway for a websocket endpoint and ticket.
func (c *Channel) open(ctx context.Context) (string, error) {
	var out struct {
		Endpoint string `json:"endpoint"`
		Ticket   string `json:"ticket"`
	}
	req := map[string]any{
		"clientId":      c.cfg.ClientID,
		"clientSecret":  c.cfg.ClientSecret,
		"subscriptions": []map[string]string{{"type": "CALLBACK", "topic": TopicBotMessage}},
		"ua":            "nanobot-go",
		"localIp":       localIP(),
	}
	plain := &kit.Client{Base: c.cfg.APIBase, HTTP: c.http, Redact: c.redact, Check: c.api.Check}
	if err := plain.Do(ctx, http.MethodPost, "/v1.0/gateway/connections/open", req, &out); err != nil {
		var ae *kit.APIError
		if errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden || ae.Status == http.StatusBadRequest) {
			return "", kit.Fatal(fmt.Errorf("dingtalk: the gateway refused clientId/clientSecret: %w", err))
		}
		return "", err
	}
	if out.Endpoint == "" || out.Ticket == "" {
		return "", errors.New("dingtalk: connections/open returned no endpoint or ticket")
	}
	c.redact.Add(out.Ticket)
	u, err := url.Parse(out.Endpoint)
	if err != nil {
		return "", fmt.Errorf("dingtalk: bad endpoint: %w", err)
	}
	q := u.Query()
	q.Set("ticket", out.Ticket)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// localIP is the address of the outgoing interface, reported to the
// gateway as the SDKs do ("" when unknown).
func localIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && !ip.IP.IsLoopback() && ip.IP.To4() != nil {
			return ip.IP.String()
		}
	}
	return ""
}

// conn is one websocket with serialised writes.
type conn struct {
	ws *websocket.Conn
	mu sync.Mutex
}

func (k *conn) send(ctx context.Context, a ack) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ws.Write(ctx, websocket.MessageText, b)
}

// session is one connection: open, dial, read frames until an error, a
// disconnect frame or ctx ends. Bot messages are handled in order by one
// worker so that a slow Inbox does not stop pings from being answered.
func (c *Channel) session(ctx context.Context, in channels.Inbox, up func()) error {
	endpoint, err := c.open(ctx)
	if err != nil {
		return err
	}
	ws, _, err := websocket.Dial(ctx, endpoint, &websocket.DialOptions{HTTPClient: &http.Client{Transport: c.http.Transport}})
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("dingtalk: dialing the stream: %s", c.redact.Error(err))
	}
	ws.SetReadLimit(4 << 20)
	k := &conn{ws: ws}
	up()
	c.log.Info("dingtalk: stream connected")

	sctx, cancel := context.WithCancel(ctx)
	work := make(chan frame, 64)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-sctx.Done():
				return
			case f := <-work:
				c.handleCallback(sctx, in, k, f)
			}
		}
	})
	defer func() {
		cancel()
		wg.Wait()
		_ = ws.CloseNow()
	}()

	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("dingtalk: stream read: %s", c.redact.Error(err))
		}
		var f frame
		if err := json.Unmarshal(data, &f); err != nil {
			c.log.Warn("dingtalk: malformed stream frame skipped", "err", err)
			continue
		}
		id := f.Headers["messageId"]
		switch f.Type {
		case "SYSTEM":
			switch f.Headers["topic"] {
			case "ping":
				if err := k.send(ctx, okAck(id, f.Data)); err != nil {
					return fmt.Errorf("dingtalk: answering a ping: %w", err)
				}
			case "disconnect":
				_ = k.send(ctx, okAck(id, ""))
				_ = ws.Close(websocket.StatusNormalClosure, "")
				return errors.New("dingtalk: server asked to reconnect")
			default:
				_ = k.send(ctx, okAck(id, ""))
			}
		case "CALLBACK":
			if f.Headers["topic"] != TopicBotMessage {
				_ = k.send(ctx, ack{Code: http.StatusNotFound, Headers: ackHeaders(id), Message: "unknown topic"})
				continue
			}
			select {
			case work <- f:
			case <-ctx.Done():
				return ctx.Err()
			}
		default: // EVENT and anything newer: not subscribed
			_ = k.send(ctx, ack{Code: http.StatusNotFound, Headers: ackHeaders(id), Message: "not handled"})
		}
	}
}

func ackHeaders(id string) map[string]string {
	return map[string]string{"messageId": id, "contentType": "application/json"}
}

func okAck(id, data string) ack {
	return ack{Code: http.StatusOK, Headers: ackHeaders(id), Message: "OK", Data: data}
}
