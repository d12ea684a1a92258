package gateway

import (
	"context"
	"fmt"

	"github.com/nanobot-go/nanobot/bus"
)

// restartFunc is the agents' side of /restart: the chat that asked, passed
// on to Options.Restart (nil when restarting is not available).
func (g *Gateway) restartFunc() func(channel, chatID, sessionKey string) {
	if g.o.Restart == nil {
		return nil
	}
	return func(channel, chatID, sessionKey string) {
		g.log.Info("restart requested from chat", "channel", channel, "chat_id", chatID)
		g.o.Restart(RestartOrigin{Channel: channel, ChatID: chatID, SessionKey: sessionKey})
	}
}

// welcomeBack tells the chat that asked for the restart this process
// comes from that the gateway is back. The dispatcher retries while the
// channel is still connecting.
func (g *Gateway) welcomeBack(ctx context.Context) {
	o := g.o.RestartedFrom
	if o == nil {
		return
	}
	text := "✅ Restarted"
	if g.o.Version != "" {
		text += fmt.Sprintf(" (nanobot %s)", g.o.Version)
	}
	err := g.be.PublishOutbound(ctx, bus.Outbound{Channel: o.Channel, ChatID: o.ChatID, SessionKey: o.SessionKey, Kind: bus.KindMessage, Content: text + ".", Final: true})
	if err != nil {
		g.log.Warn("the restart notice was not sent", "channel", o.Channel, "chat_id", o.ChatID, "err", err)
	}
}
