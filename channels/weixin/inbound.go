// Inbound: the getupdates long poll and the messages it brings.

package weixin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

// Item types of a message.
const (
	itemText  = 1
	itemImage = 2
	itemVoice = 3
	itemFile  = 4
	itemVideo = 5
)

type cdnMedia struct {
	Param  string `json:"encrypt_query_param"`
	AESKey string `json:"aes_key"`
}

type item struct {
	Type     int `json:"type"`
	TextItem struct {
		Text string `json:"text"`
	} `json:"text_item"`
	ImageItem struct {
		Media  cdnMedia `json:"media"`
		AESKey string   `json:"aeskey"` // hex, on some images
	} `json:"image_item"`
	VoiceItem struct {
		Text string `json:"text"`
	} `json:"voice_item"`
	FileItem struct {
		Media    cdnMedia `json:"media"`
		FileName string   `json:"file_name"`
	} `json:"file_item"`
	VideoItem struct {
		Media cdnMedia `json:"media"`
	} `json:"video_item"`
}

type message struct {
	MessageID    json.Number `json:"message_id"`
	FromUserID   string      `json:"from_user_id"`
	MessageType  int         `json:"message_type"`
	ContextToken string      `json:"context_token"`
	Items        []item      `json:"item_list"`
}

// Run long-polls for messages and delivers them to in until ctx ends; it
// returns nil then. Network failures are retried with backoff; a missing or
// expired login ends it with a channels.FatalError.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	if c.token() == "" {
		c.health.Set(channels.StateFailed, "not logged in")
		return channels.Fatal(errors.New("weixin: not logged in; run `nanobot channels login weixin` and scan the QR code with WeChat"))
	}
	loop := &channels.Loop{Name: "weixin", Log: c.log, Health: &c.health, Redact: c.redact.Error, Min: c.backoffMin, Max: c.backoffMax}
	err := loop.Run(ctx, func(ctx context.Context, up func()) error { return c.poll(ctx, in, up) })
	c.http.CloseIdleConnections()
	return err
}

var errRedeliver = errors.New("weixin: a message could not be queued; polling again from the last cursor")

// poll runs long polls until one fails.
func (c *Channel) poll(ctx context.Context, in channels.Inbox, up func()) error {
	for ctx.Err() == nil {
		var out struct {
			Msgs    []json.RawMessage `json:"msgs"`
			Cursor  string            `json:"get_updates_buf"`
			Timeout int               `json:"longpolling_timeout_ms"`
		}
		pctx, cancel := context.WithTimeout(ctx, time.Duration(c.cfg.PollTimeout)*time.Second+15*time.Second)
		err := c.call(pctx, "ilink/bot/getupdates", map[string]any{
			"get_updates_buf": c.state.cursor(), "base_info": map[string]string{"channel_version": channelVersion},
		}, &out, true)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, errStale) {
				return channels.Fatal(err)
			}
			return err
		}
		up()
		contexts := map[string]string{}
		for _, raw := range out.Msgs {
			var m message
			if err := json.Unmarshal(raw, &m); err != nil {
				c.log.Warn("weixin: unreadable message skipped", "err", err)
				continue
			}
			if m.MessageType != 1 || m.FromUserID == "" {
				continue // the bot's own, or not from a user
			}
			if m.ContextToken != "" {
				contexts[m.FromUserID] = m.ContextToken
				c.state.mu.Lock()
				c.state.d.Contexts[m.FromUserID] = m.ContextToken // replies may go before the commit
				c.state.mu.Unlock()
			}
			if !c.deliver(ctx, in, m) {
				return errRedeliver
			}
		}
		cursor := out.Cursor
		if cursor == "" {
			cursor = c.state.cursor()
		}
		if err := c.state.commit(cursor, contexts); err != nil {
			c.log.Warn("weixin: saving the cursor failed", "err", err)
		}
	}
	return nil
}

// deliver hands one message to the gateway; false when it could not be
// queued (it is then polled again).
func (c *Channel) deliver(ctx context.Context, in channels.Inbox, m message) bool {
	id := m.MessageID.String()
	if c.dedup.Seen(id) {
		return true
	}
	msg := bus.Inbound{Channel: c.Name(), SenderID: m.FromUserID, ChatID: m.FromUserID, MessageID: id, ReceivedAt: time.Now(),
		Metadata: bus.Metadata{}}
	var texts []string
	var items []media.Item
	for _, it := range m.Items {
		switch it.Type {
		case itemText:
			texts = append(texts, it.TextItem.Text)
		case itemVoice:
			if t := strings.TrimSpace(it.VoiceItem.Text); t != "" {
				texts = append(texts, t)
			} else {
				texts = append(texts, "[voice message]")
			}
		case itemImage:
			key := it.ImageItem.Media.AESKey
			if key == "" && it.ImageItem.AESKey != "" {
				key = it.ImageItem.AESKey
			}
			items = append(items, c.item(it.ImageItem.Media.Param, key, "image.jpg"))
		case itemFile:
			items = append(items, c.item(it.FileItem.Media.Param, it.FileItem.Media.AESKey, it.FileItem.FileName))
		case itemVideo:
			items = append(items, c.item(it.VideoItem.Media.Param, it.VideoItem.Media.AESKey, "video.mp4"))
		}
	}
	msg.Content = strings.TrimSpace(strings.Join(texts, "\n"))
	if len(items) > 0 {
		media.Collector{Dir: c.mediaDir, Max: c.cfg.MaxMediaBytes, Platform: "weixin", Log: c.log, Redact: c.redact.String}.
			Collect(ctx, &msg, channels.Admits(in, c.Name(), msg.SenderID), items)
	}
	if msg.Content == "" && len(msg.Media) == 0 {
		return true
	}
	// Not taken, also when ctx ended while the gateway could not store:
	// the cursor must not be committed past it.
	err := channels.DeliverRetrying(ctx, in, msg, c.log, c.backoffMin, c.backoffMax)
	if err == nil || errors.Is(err, channels.ErrDenied) {
		return true
	}
	c.log.Warn("weixin: the gateway did not take a message; it is polled again", "message_id", id, "err", err)
	c.dedup.Forget(id)
	return false
}

// item is an attachment on WeChat's CDN.
func (c *Channel) item(param, aesKey, name string) media.Item {
	return media.Item{Name: name, Fetch: func(ctx context.Context) ([]byte, error) {
		if param == "" || aesKey == "" {
			return nil, errors.New("weixin: attachment without a download parameter or key")
		}
		u := strings.TrimRight(c.cfg.CDNBaseURL, "/") + "/download?encrypted_query_param=" + urlQueryEscape(param)
		data, err := media.Fetch(ctx, c.http, u, nil, c.cfg.MaxMediaBytes+16)
		if err != nil {
			return nil, err
		}
		plain, err := decrypt(data, aesKey)
		if err != nil {
			return nil, fmt.Errorf("weixin: attachment: %w", err)
		}
		return plain, nil
	}}
}
