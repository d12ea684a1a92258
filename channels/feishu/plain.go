package feishu

import (
	"context"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/bus"
)

// PlainChannel is the channel with streaming off: it is not an Editor, so
// the Dispatcher sends each reply once, complete, as post messages.
type PlainChannel struct{ c *Channel }

var (
	_ channels.Channel        = (*PlainChannel)(nil)
	_ channels.Limiter        = (*PlainChannel)(nil)
	_ channels.Reactor        = (*PlainChannel)(nil)
	_ channels.MediaSender    = (*PlainChannel)(nil)
	_ channels.HealthReporter = (*PlainChannel)(nil)
)

// Plain returns c without edits (streaming: false).
func (c *Channel) Plain() *PlainChannel { return &PlainChannel{c: c} }

// Name implements channels.Channel.
func (p *PlainChannel) Name() string { return p.c.Name() }

// Run implements channels.Channel.
func (p *PlainChannel) Run(ctx context.Context, in channels.Inbox) error { return p.c.Run(ctx, in) }

// Send implements channels.Channel.
func (p *PlainChannel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	return p.c.Send(ctx, m)
}

// MessageLimit implements channels.Limiter.
func (p *PlainChannel) MessageLimit() int { return p.c.MessageLimit() }

// React implements channels.Reactor.
func (p *PlainChannel) React(ctx context.Context, chatID, messageID, emoji string) error {
	return p.c.React(ctx, chatID, messageID, emoji)
}

// SendMedia implements channels.MediaSender.
func (p *PlainChannel) SendMedia(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	return p.c.SendMedia(ctx, m)
}

// Health implements channels.HealthReporter.
func (p *PlainChannel) Health() channels.Health { return p.c.Health() }
