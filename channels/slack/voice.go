package slack

import (
	"bytes"
	"context"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

var _ channels.VoiceSender = (*Channel)(nil)

// SendVoice sends m.Media[0] (Ogg/Opus) as an audio file: Slack has no
// voice messages a bot can send, so the spoken answer is uploaded like any
// file (files.getUploadURLExternal, upload, files.completeUploadExternal)
// into the conversation and thread, titled with its length. The file is
// checked to be Ogg/Opus first.
func (c *Channel) SendVoice(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	v, err := media.ReadVoice(m, 0)
	if err != nil {
		return channels.MessageRef{}, channels.Permanentf("slack: send voice: %w", err)
	}
	thread := ""
	if c.cfg.threads() {
		thread = replyThread(m)
	}
	title := fmt.Sprintf("Voice reply (%d s)", media.Seconds(v.Duration))
	_, err = c.api.UploadFileContext(ctx, slack.UploadFileParameters{
		Reader: bytes.NewReader(v.Data), FileSize: len(v.Data), Filename: v.Name, Title: title,
		Channel: m.ChatID, ThreadTimestamp: thread,
	})
	if err != nil {
		return channels.MessageRef{}, c.sendError("upload voice reply to "+m.ChatID, err)
	}
	return channels.MessageRef{ChatID: m.ChatID}, nil
}
