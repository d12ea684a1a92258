package dingtalk

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
	"github.com/nanobot-go/nanobot/channels/kit"
)

// TopicBotMessage is the stream topic of messages to the robot.
const TopicBotMessage = "/v1.0/im/bot/messages/get"

// frame is one stream frame from DingTalk.
type frame struct {
	SpecVersion string `json:"specVersion"`
	Type        string `json:"type"` // SYSTEM, EVENT, CALLBACK
	Headers     struct {
		Topic       string `json:"topic"`
		MessageID   string `json:"messageId"`
		ContentType string `json:"contentType"`
	} `json:"headers"`
	Data string `json:"data"`
}

// ack is the answer to a frame.
type ack struct {
	Code    int               `json:"code"`
	Headers map[string]string `json:"headers"`
	Message string            `json:"message"`
	Data    string            `json:"data"`
}

// readLimit caps one frame.
const readLimit = 4 << 20

var (
	errDisconnect = errors.New("DingTalk asked to reconnect (SYSTEM disconnect)")
	errRedeliver  = errors.New("a message could not be handed to the gateway; reconnecting so that DingTalk delivers it again")
)

// stream is one connection's life (a kit.Session).
func (c *Channel) stream(ctx context.Context, in channels.Inbox, up func()) error {
	var ep struct {
		Endpoint string `json:"endpoint"`
		Ticket   string `json:"ticket"`
	}
	body := map[string]any{
		"clientId": c.cfg.ClientID, "clientSecret": c.cfg.ClientSecret, "ua": "nanobot-go", "localIp": "",
		"subscriptions": []map[string]string{{"type": "CALLBACK", "topic": TopicBotMessage}},
	}
	if err := c.open.Do(ctx, http.MethodPost, "/v1.0/gateway/connections/open", body, &ep); err != nil {
		if rejected(err) {
			return channels.Fatal(fmt.Errorf("dingtalk: DingTalk rejected clientId/clientSecret: %w", err))
		}
		return fmt.Errorf("dingtalk: opening the stream: %w", err)
	}
	if ep.Endpoint == "" || ep.Ticket == "" {
		return errors.New("dingtalk: opening the stream: no endpoint or ticket in the answer")
	}
	c.redact.Add(ep.Ticket)
	u, err := url.Parse(ep.Endpoint)
	if err != nil {
		return fmt.Errorf("dingtalk: stream endpoint: %w", err)
	}
	q := u.Query()
	q.Set("ticket", ep.Ticket)
	u.RawQuery = q.Encode()
	conn, _, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPClient: c.http})
	if err != nil {
		return fmt.Errorf("dingtalk: connecting the stream: %s", c.redact.Error(err))
	}
	defer conn.CloseNow()
	conn.SetReadLimit(readLimit)
	up()
	for {
		rctx, cancel := context.WithTimeout(ctx, c.idle)
		_, data, err := conn.Read(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				_ = conn.Close(websocket.StatusNormalClosure, "")
				return nil
			}
			return fmt.Errorf("dingtalk: stream: %s", c.redact.Error(err))
		}
		var f frame
		if err := json.Unmarshal(data, &f); err != nil || f.Headers.MessageID == "" {
			c.log.Warn("dingtalk: unreadable stream frame skipped", "bytes", len(data), "err", err)
			continue
		}
		reply, err := c.frame(ctx, in, f)
		if reply != nil {
			if werr := c.write(ctx, conn, *reply); werr != nil {
				return werr
			}
		}
		if err != nil {
			if errors.Is(err, errDisconnect) {
				_ = conn.Close(websocket.StatusNormalClosure, "reconnecting")
			}
			return err
		}
	}
}

// frame handles one frame and returns its acknowledgement (nil: none, the
// frame is to be delivered again).
func (c *Channel) frame(ctx context.Context, in channels.Inbox, f frame) (*ack, error) {
	ok := func(data string) *ack {
		return &ack{Code: 200, Message: "OK", Data: data,
			Headers: map[string]string{"messageId": f.Headers.MessageID, "contentType": "application/json"}}
	}
	switch {
	case f.Type == "SYSTEM" && f.Headers.Topic == "ping":
		return ok(f.Data), nil
	case f.Type == "SYSTEM" && f.Headers.Topic == "disconnect":
		c.log.Info("dingtalk: the server asked to reconnect")
		return ok(""), errDisconnect
	case f.Type == "CALLBACK" && f.Headers.Topic == TopicBotMessage:
		switch c.message(ctx, in, f.Data) {
		case handled:
			return ok(`{"response":null}`), nil
		default:
			return nil, errRedeliver
		}
	case f.Type == "EVENT":
		return ok(`{"status":"SUCCESS","message":"success"}`), nil
	}
	c.log.Debug("dingtalk: frame for an unknown topic", "type", f.Type, "topic", f.Headers.Topic)
	a := ok("")
	a.Code, a.Message = 404, "no handler for this topic"
	return a, nil
}

func (c *Channel) write(ctx context.Context, conn *websocket.Conn, a ack) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := conn.Write(wctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("dingtalk: stream: acknowledging: %s", c.redact.Error(err))
	}
	return nil
}

// rejected reports whether DingTalk refused the credentials.
func rejected(err error) bool {
	var ae *kit.APIError
	if !errors.As(err, &ae) {
		return false
	}
	return ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden ||
		(ae.Status == http.StatusBadRequest && ae.Code != "")
}
