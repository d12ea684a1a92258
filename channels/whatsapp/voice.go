package whatsapp

import (
	"context"
	"fmt"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"google.golang.org/protobuf/proto"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

var _ channels.VoiceSender = (*Channel)(nil)

// SendVoice sends m.Media[0] (Ogg/Opus) as a voice note: uploaded as
// audio media and sent as an AudioMessage with PTT set, the
// "audio/ogg; codecs=opus" type WhatsApp plays inline, and its length.
func (c *Channel) SendVoice(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	cli, to, err := c.target(m.ChatID)
	if err != nil {
		return channels.MessageRef{}, err
	}
	v, err := media.ReadVoice(m, c.cfg.MaxMediaBytes)
	if err != nil {
		return channels.MessageRef{}, channels.Permanentf("whatsapp: send voice: %w", err)
	}
	up, err := cli.Upload(ctx, v.Data, whatsmeow.MediaAudio)
	if err != nil {
		return channels.MessageRef{}, fmt.Errorf("whatsapp: upload voice note: %w", err)
	}
	n := uint64(len(v.Data))
	msg := &waE2E.Message{AudioMessage: &waE2E.AudioMessage{
		URL: proto.String(up.URL), DirectPath: proto.String(up.DirectPath), MediaKey: up.MediaKey,
		FileEncSHA256: up.FileEncSHA256, FileSHA256: up.FileSHA256, FileLength: &n,
		Mimetype: proto.String(media.MIMEOggOpus), PTT: proto.Bool(true),
		Seconds: proto.Uint32(uint32(media.Seconds(v.Duration))),
	}}
	resp, err := cli.SendMessage(ctx, to, msg)
	if err != nil {
		return channels.MessageRef{}, fmt.Errorf("whatsapp: send voice note to %s: %w", to, err)
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: resp.ID}, nil
}
