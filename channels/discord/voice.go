package discord

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"

	"github.com/bwmarrin/discordgo"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

var _ channels.VoiceSender = (*Channel)(nil)

// voiceMessage is the payload_json of a voice message: the
// IS_VOICE_MESSAGE flag and the attachment's duration and waveform,
// which discordgo's MessageSend cannot carry.
type voiceMessage struct {
	Flags           discordgo.MessageFlags            `json:"flags"`
	Attachments     []voiceAttachment                 `json:"attachments"`
	AllowedMentions *discordgo.MessageAllowedMentions `json:"allowed_mentions,omitempty"`
	Reference       *discordgo.MessageReference       `json:"message_reference,omitempty"`
}

type voiceAttachment struct {
	ID           int     `json:"id"`
	Filename     string  `json:"filename"`
	DurationSecs float64 `json:"duration_secs"`
	// Waveform is base64 of up to 256 one-byte levels.
	Waveform string `json:"waveform"`
}

// SendVoice sends m.Media[0] (Ogg/Opus) as a Discord voice message: one
// audio/ogg attachment with its duration and a waveform (estimated from
// the Opus packet sizes), and the IS_VOICE_MESSAGE flag; Discord allows no
// text with it (the text answer was sent before).
func (c *Channel) SendVoice(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	if m.ChatID == "" {
		return channels.MessageRef{}, channels.Permanentf("discord: send voice: empty chat id")
	}
	v, err := media.ReadVoice(m, c.cfg.MaxMediaBytes)
	if err != nil {
		return channels.MessageRef{}, channels.Permanentf("discord: send voice: %w", err)
	}
	payload := voiceMessage{
		Flags: discordgo.MessageFlagsIsVoiceMessage,
		Attachments: []voiceAttachment{{
			ID: 0, Filename: v.Name, DurationSecs: max(v.Duration.Seconds(), 0.1),
			Waveform: base64.StdEncoding.EncodeToString(v.Waveform),
		}},
		AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}},
	}
	if c.cfg.ReplyToMessage && m.ReplyTo != "" {
		no := false
		payload.Reference = &discordgo.MessageReference{MessageID: m.ReplyTo, ChannelID: m.ChatID, FailIfNotExists: &no}
	}
	file := &discordgo.File{Name: v.Name, ContentType: "audio/ogg", Reader: bytes.NewReader(v.Data)}
	ct, body, err := discordgo.MultipartBodyWithJSON(payload, []*discordgo.File{file})
	if err != nil {
		return channels.MessageRef{}, channels.Permanentf("discord: send voice: %w", err)
	}
	endpoint := discordgo.EndpointChannelMessages(m.ChatID)
	resp, err := c.s.RequestRaw("POST", endpoint, ct, body, endpoint, 0, discordgo.WithContext(ctx))
	if err != nil {
		return channels.MessageRef{}, c.sendError("send voice to channel "+m.ChatID, err)
	}
	var msg discordgo.Message
	if err := discordgo.Unmarshal(resp, &msg); err != nil {
		return channels.MessageRef{}, fmt.Errorf("discord: send voice: bad answer: %w", err)
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: msg.ID}, nil
}
