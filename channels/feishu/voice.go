package feishu

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

var _ channels.VoiceSender = (*Channel)(nil)

// SendVoice sends m.Media[0] (Ogg/Opus) as a Feishu/Lark audio message:
// uploaded to im/v1/files with file_type "opus" and its duration in
// milliseconds, then sent as msg_type "audio" with the file_key, in the
// user's topic when there is one.
func (c *Channel) SendVoice(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	if m.ChatID == "" {
		return channels.MessageRef{}, channels.Permanentf("feishu: send voice: empty chat id")
	}
	v, err := media.ReadVoice(m, 30<<20)
	if err != nil {
		return channels.MessageRef{}, channels.Permanentf("feishu: send voice: %w", err)
	}
	name := strings.TrimSuffix(v.Name, filepath.Ext(v.Name)) + ".opus"
	fields := [][2]string{{"file_type", "opus"}, {"file_name", name}, {"duration", strconv.FormatInt(max(v.Duration.Milliseconds(), 1), 10)}}
	out, err := c.upload(ctx, "/open-apis/im/v1/files", "file", name, fields, v.Data)
	if err != nil {
		return channels.MessageRef{}, err
	}
	if out.Data.FileKey == "" {
		return channels.MessageRef{}, fmt.Errorf("feishu: upload %s: no file_key in the answer", name)
	}
	id, err := c.post(ctx, m, "audio", map[string]string{"file_key": out.Data.FileKey})
	if err != nil {
		return channels.MessageRef{}, err
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: id}, nil
}
