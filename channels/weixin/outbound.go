package weixin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"sync"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// Send implements channels.Channel: a text message to the user, with the
// user's latest context token (WeChat refuses replies without one).
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	text := plain(m.Content)
	if text == "" {
		return channels.MessageRef{}, channels.Permanentf("weixin: empty message")
	}
	ctxToken := c.state.contextOf(m.ChatID)
	if ctxToken == "" {
		return channels.MessageRef{}, channels.Permanentf("weixin: send to %s: WeChat lets the bot answer only users who wrote to it, and this one has not", m.ChatID)
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	clientID := "nanobot-" + hex.EncodeToString(b[:])
	body := map[string]any{"msg": map[string]any{
		"from_user_id": "", "to_user_id": m.ChatID, "client_id": clientID, "message_type": 2, "message_state": 2,
		"context_token": ctxToken, "item_list": []map[string]any{{"type": itemText, "text_item": map[string]string{"text": text}}},
	}, "base_info": map[string]string{"channel_version": channelVersion}}
	if err := c.call(ctx, "ilink/bot/sendmessage", body, nil, true); err != nil {
		var ae *apiError
		if errors.As(err, &ae) || errors.Is(err, errStale) {
			return channels.MessageRef{}, &channels.PermanentError{Err: err}
		}
		return channels.MessageRef{}, err
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: clientID}, nil
}

var (
	mdHeading = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^#{1,6}\s+`) })
	mdLink    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[([^\]]+)\]\((\S+?)\)`) })
	mdEmph    = strings.NewReplacer("**", "", "__", "", "~~", "")
)

// plain turns Markdown into text WeChat shows well: headings and emphasis
// marks go, links become "text (url)"; code blocks and lists stay as they
// read fine.
func plain(md string) string {
	s := mdHeading().ReplaceAllString(md, "")
	s = mdLink().ReplaceAllString(s, "$1 ($2)")
	return strings.TrimSpace(mdEmph.Replace(s))
}
