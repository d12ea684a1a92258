package line

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/line/line-bot-sdk-go/v8/linebot/messaging_api"

	"github.com/nanobot-go/nanobot/channels"
)

// api returns an SDK client for one call: the SDK keeps the context in the
// client, so a shared one would race between concurrent calls.
func (c *Channel) api(ctx context.Context) (*messaging_api.MessagingApiAPI, error) {
	api, err := messaging_api.NewMessagingApiAPI(c.cfg.ChannelAccessToken,
		messaging_api.WithEndpoint(c.cfg.APIBase), messaging_api.WithHTTPClient(c.http))
	if err != nil {
		return nil, fmt.Errorf("line: %s", c.redact.Error(err))
	}
	return api.WithContext(ctx), nil
}

func (c *Channel) blob(ctx context.Context) (*messaging_api.MessagingApiBlobAPI, error) {
	api, err := messaging_api.NewMessagingApiBlobAPI(c.cfg.ChannelAccessToken,
		messaging_api.WithBlobEndpoint(c.cfg.DataAPIBase), messaging_api.WithBlobHTTPClient(c.http))
	if err != nil {
		return nil, fmt.Errorf("line: %s", c.redact.Error(err))
	}
	return api.WithContext(ctx), nil
}

// StatusError is an error answer from the Messaging API.
type StatusError struct {
	Op     string
	Status int
	Err    string // the SDK's text, with LINE's message
}

func (e *StatusError) Error() string { return fmt.Sprintf("line: %s: %s", e.Op, e.Err) }

// apiError classifies an SDK call's outcome: 429 waits, other 4xx except
// 401 are permanent.
func (c *Channel) apiError(op string, res *http.Response, err error) error {
	if err == nil {
		return nil
	}
	if res == nil {
		return fmt.Errorf("line: %s: %s", op, c.redact.Error(err))
	}
	se := &StatusError{Op: op, Status: res.StatusCode, Err: c.redact.Error(err)}
	switch {
	case res.StatusCode == http.StatusTooManyRequests:
		after := time.Second
		if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s > 0 {
			after = time.Duration(s) * time.Second
		}
		return &channels.RetryAfterError{After: after, Err: se}
	case res.StatusCode >= 400 && res.StatusCode < 500 && res.StatusCode != http.StatusUnauthorized && res.StatusCode != http.StatusRequestTimeout:
		return &channels.PermanentError{Err: se}
	}
	return se
}

func status(err error) int {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status
	}
	return 0
}

// Run checks the access token (GET /v2/bot/info, which also gives the
// bot's user id for mentions), then takes webhooks until ctx ends; it
// returns nil then. A rejected token stops the channel.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	loop := &channels.Loop{Name: "line", Log: c.log, Health: &c.health, Redact: c.redact.Error, Min: c.backoffMin, Max: c.backoffMax}
	err := loop.Run(ctx, func(ctx context.Context, up func()) error {
		api, err := c.api(ctx)
		if err != nil {
			return channels.Fatal(err)
		}
		res, info, err := api.GetBotInfoWithHttpInfo()
		if err := c.apiError("GET /v2/bot/info", res, err); err != nil {
			if s := status(err); s == http.StatusUnauthorized || s == http.StatusForbidden {
				return channels.Fatal(fmt.Errorf("line: LINE rejected the channel access token (HTTP %d); issue a new one in the LINE Developers console", s))
			}
			return err
		}
		c.mu.Lock()
		c.botID, c.inbox = info.UserId, in
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			c.inbox = nil
			c.mu.Unlock()
		}()
		c.log.Info("line: ready", "bot", info.DisplayName, "webhook_path", c.cfg.WebhookPath)
		up()
		<-ctx.Done()
		return nil
	})
	c.http.CloseIdleConnections()
	return err
}
