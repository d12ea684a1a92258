package whatsapp

import (
	"context"
	"errors"
	"fmt"

	"go.mau.fi/whatsmeow/types/events"

	"github.com/nanobot-go/nanobot/channels"
)

// ErrNotPaired ends Run when the device store holds no paired device.
var ErrNotPaired = errors.New("whatsapp: not paired with a phone yet: run `nanobot channels login whatsapp`")

// Run implements channels.Channel: open the device, connect, and handle
// events until ctx ends. whatsmeow reconnects by itself after a dropped
// connection (health shows reconnecting meanwhile); a first connection
// that fails is retried here with backoff and jitter. Being logged out
// from the phone ends Run with an error.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	cli, closeFn, err := c.open(ctx)
	if err != nil {
		c.health.Set(channels.StateFailed, err.Error())
		return err
	}
	defer closeFn()
	if !cli.IsLoggedIn() {
		c.health.Set(channels.StateFailed, ErrNotPaired.Error())
		return ErrNotPaired
	}
	loggedOut := make(chan error, 1)
	c.mu.Lock()
	c.cli, c.inbox, c.ctx = cli, in, ctx
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.cli, c.inbox = nil, nil
		c.mu.Unlock()
	}()
	cli.AddEventHandler(func(evt any) { c.onEvent(evt, loggedOut) })
	for attempt := 1; ; attempt++ {
		err := cli.Connect()
		if err == nil {
			break
		}
		c.health.Set(channels.StateReconnecting, err.Error())
		c.log.Warn("whatsapp: connect failed; retrying", "err", err, "attempt", attempt)
		if c.sleep(ctx, attempt) != nil {
			return nil
		}
	}
	select {
	case <-ctx.Done():
		cli.Disconnect()
		c.health.Set(channels.StateStopped, "")
		return nil
	case err := <-loggedOut:
		c.health.Set(channels.StateFailed, err.Error())
		return err
	}
}

// onEvent handles whatsmeow's events (called on its goroutines).
func (c *Channel) onEvent(evt any, loggedOut chan<- error) {
	switch e := evt.(type) {
	case *events.Connected:
		c.health.Set(channels.StateConnected, "")
		c.log.Info("whatsapp: connected")
	case *events.Disconnected:
		c.health.Set(channels.StateReconnecting, "disconnected")
		c.log.Warn("whatsapp: disconnected; reconnecting")
	case *events.StreamReplaced:
		c.health.Set(channels.StateReconnecting, "another client took over this session")
		c.log.Warn("whatsapp: another client connected with this device; reconnecting")
	case *events.LoggedOut:
		err := fmt.Errorf("whatsapp: logged out from the phone (reason %v): pair again with `nanobot channels login whatsapp`", e.Reason)
		c.log.Error(err.Error())
		select {
		case loggedOut <- err:
		default:
		}
	case *events.Message:
		c.mu.Lock()
		cli, in, ctx := c.cli, c.inbox, c.ctx
		c.mu.Unlock()
		if cli == nil || in == nil {
			return
		}
		c.handle(ctx, cli, in, e)
	}
}

// sleep waits the backoff for the n-th consecutive failure (with jitter),
// or until ctx ends.
func (c *Channel) sleep(ctx context.Context, n int) error {
	return channels.SleepBackoff(ctx, n, c.backoffMin, c.backoffMax)
}
