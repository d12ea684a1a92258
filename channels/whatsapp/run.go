package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"go.mau.fi/whatsmeow/types/events"

	"github.com/nanobot-go/nanobot/channels"
)

// ErrNotPaired ends Run (as a channels.FatalError) when the device store
// holds no paired device.
var ErrNotPaired = errors.New("whatsapp: not paired with a phone yet: run `nanobot channels login whatsapp`")

// ErrLoggedOut ends Run (as a channels.FatalError) when the phone unlinked
// this device.
var ErrLoggedOut = errors.New("whatsapp: logged out from the phone: pair again with `nanobot channels login whatsapp`")

// ErrReplaced ends Run (as a channels.FatalError) when another client
// connected with this device's keys: reconnecting would only knock it off
// in turn.
var ErrReplaced = errors.New("whatsapp: another client connected with this device (stream replaced); stop the other gateway, then reload or restart this one")

// Run implements channels.Channel: open the device, connect, and handle
// events until ctx ends. A channels.Loop connects with backoff and jitter;
// whatsmeow reconnects by itself after a dropped connection (health shows
// reconnecting meanwhile). Being logged out from the phone, or replaced by
// another client, ends Run with a channels.FatalError.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	if c.legacyOnly() {
		c.health.Set(channels.StateFailed, ErrLegacyStore.Error())
		return channels.Fatal(ErrLegacyStore)
	}
	cli, closeFn, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer closeFn()
	if !cli.IsLoggedIn() {
		c.health.Set(channels.StateFailed, ErrNotPaired.Error())
		return channels.Fatal(ErrNotPaired)
	}
	loop := &channels.Loop{Name: "whatsapp", Log: c.log, Health: &c.health, Min: c.backoffMin, Max: c.backoffMax}
	ended := make(chan error, 1)
	var link atomic.Pointer[func()] // the current session's up
	c.mu.Lock()
	c.cli, c.inbox, c.ctx = cli, in, ctx
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.cli, c.inbox = nil, nil
		c.mu.Unlock()
	}()
	cli.AddEventHandler(func(evt any) {
		switch e := evt.(type) {
		case *events.Connected:
			c.log.Info("whatsapp: connected")
			if up := link.Load(); up != nil {
				(*up)()
			}
		case *events.Disconnected:
			c.log.Warn("whatsapp: disconnected; whatsmeow reconnects")
			loop.Lost(errors.New("disconnected"))
		case *events.StreamReplaced:
			end(ended, channels.Fatal(ErrReplaced))
		case *events.LoggedOut:
			end(ended, channels.Fatal(fmt.Errorf("%w (reason %v)", ErrLoggedOut, e.Reason)))
		default:
			c.onEvent(evt)
		}
	})
	return loop.Run(ctx, func(ctx context.Context, up func()) error {
		link.Store(&up)
		defer link.Store(nil)
		if err := cli.Connect(); err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		select {
		case <-ctx.Done():
			cli.Disconnect()
			return nil
		case err := <-ended:
			cli.Disconnect()
			return err
		}
	})
}

// end hands the reason the session must end to it, once.
func end(ended chan<- error, err error) {
	select {
	case ended <- err:
	default:
	}
}

// onEvent handles whatsmeow's message events (called on its goroutines).
func (c *Channel) onEvent(evt any) {
	if e, ok := evt.(*events.Message); ok {
		c.mu.Lock()
		cli, in, ctx := c.cli, c.inbox, c.ctx
		c.mu.Unlock()
		if cli == nil || in == nil {
			return
		}
		c.handle(ctx, cli, in, e)
	}
}
