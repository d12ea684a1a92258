package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// Streaming replies are CardKit card entities (schema 2.0) with one
// markdown element. The platform wants every update of a card to carry a
// sequence number larger than the one before; it types the new text out
// ("typewriter") while streaming_mode is on, and shows a "generating"
// summary in the chat list until streaming_mode goes off.
//
// The Dispatcher ends a stream with an Edit whose Outbound is the
// KindStreamEnd message (Final for the turn's last one): that edit also
// turns streaming mode off. When the final text equals what the card
// already shows the Dispatcher makes no edit but calls Finish
// (channels.Finisher). A card that saw neither for finishIdle (a dispatcher
// that gave up) is finished by a timer; an edit arriving after that turns
// streaming mode on again first.

// elementID is the id of the card's markdown element.
const elementID = "answer"

// card is one streaming card entity.
type card struct {
	mu        sync.Mutex
	id        string // card_id
	messageID string
	chatID    string
	streamID  string
	seq       int
	streaming bool
	lastPut   time.Time
	timer     *time.Timer
}

// cardJSON is a schema 2.0 card in streaming mode showing md.
func cardJSON(md string) string {
	b, _ := json.Marshal(map[string]any{
		"schema": "2.0",
		"config": map[string]any{"streaming_mode": true, "update_multi": true},
		"body": map[string]any{"elements": []map[string]any{
			{"tag": "markdown", "element_id": elementID, "content": md},
		}},
	})
	return string(b)
}

// sendCard creates a streaming card showing m's text and sends it to m's
// chat as an interactive message.
func (c *Channel) sendCard(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	c.finishStream(m.ChatID, m.StreamID) // a long reply's earlier card
	var created struct {
		Data struct {
			CardID string `json:"card_id"`
		} `json:"data"`
	}
	err := c.call(ctx, http.MethodPost, "/open-apis/cardkit/v1/cards", map[string]string{"type": "card_json", "data": cardJSON(toCard(m.Content))}, &created)
	if err != nil {
		return channels.MessageRef{}, fmt.Errorf("feishu: create card for chat %s: %w", m.ChatID, err)
	}
	if created.Data.CardID == "" {
		return channels.MessageRef{}, fmt.Errorf("feishu: create card for chat %s: no card_id in the answer", m.ChatID)
	}
	id, err := c.post(ctx, m, "interactive", map[string]any{"type": "card", "data": map[string]string{"card_id": created.Data.CardID}})
	if err != nil {
		return channels.MessageRef{}, err
	}
	cd := &card{id: created.Data.CardID, messageID: id, chatID: m.ChatID, streamID: m.StreamID, streaming: true, lastPut: time.Now()}
	c.mu.Lock()
	c.cards[id] = cd
	c.mu.Unlock()
	cd.mu.Lock()
	c.armFinish(cd)
	cd.mu.Unlock()
	return channels.MessageRef{ChatID: m.ChatID, MessageID: id, Extra: map[string]string{"card_id": cd.id}}, nil
}

// Edit implements channels.Editor: the card shows m.Content; the edit that
// carries the end of the stream also turns streaming mode off.
func (c *Channel) Edit(ctx context.Context, ref channels.MessageRef, m bus.Outbound) error {
	c.mu.Lock()
	cd := c.cards[ref.MessageID]
	c.mu.Unlock()
	if cd == nil {
		return channels.Permanentf("feishu: edit message %s: not a streaming card of this run", ref.MessageID)
	}
	cd.mu.Lock()
	defer cd.mu.Unlock()
	if cd.timer != nil {
		cd.timer.Stop()
	}
	if !cd.streaming {
		if err := c.settings(ctx, cd, true); err != nil {
			return err
		}
	}
	if wait := c.editInterval - time.Since(cd.lastPut); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	cd.seq++
	body := map[string]any{"content": toCard(m.Content), "sequence": cd.seq, "uuid": newUUID()}
	path := "/open-apis/cardkit/v1/cards/" + url.PathEscape(cd.id) + "/elements/" + elementID + "/content"
	err := c.call(ctx, http.MethodPut, path, body, nil)
	cd.lastPut = time.Now()
	if err != nil {
		c.armFinish(cd)
		return fmt.Errorf("feishu: update card of message %s: %w", ref.MessageID, err)
	}
	if m.Kind == bus.KindStreamEnd || m.Final {
		return c.finishLocked(ctx, cd)
	}
	c.armFinish(cd)
	return nil
}

// Finish implements channels.Finisher: streaming mode off on the card of
// ref, if it is still open.
func (c *Channel) Finish(ctx context.Context, ref channels.MessageRef) error {
	c.mu.Lock()
	cd := c.cards[ref.MessageID]
	c.mu.Unlock()
	if cd == nil {
		return nil
	}
	cd.mu.Lock()
	defer cd.mu.Unlock()
	return c.finishLocked(ctx, cd)
}

// settings turns a card's streaming mode on or off.
func (c *Channel) settings(ctx context.Context, cd *card, streaming bool) error {
	s, _ := json.Marshal(map[string]any{"config": map[string]any{"streaming_mode": streaming}})
	cd.seq++
	body := map[string]any{"settings": string(s), "sequence": cd.seq, "uuid": newUUID()}
	if err := c.call(ctx, http.MethodPatch, "/open-apis/cardkit/v1/cards/"+url.PathEscape(cd.id)+"/settings", body, nil); err != nil {
		return fmt.Errorf("feishu: card settings of message %s: %w", cd.messageID, err)
	}
	cd.streaming = streaming
	return nil
}

// finishLocked turns streaming off and forgets the card; cd.mu is held.
func (c *Channel) finishLocked(ctx context.Context, cd *card) error {
	if cd.timer != nil {
		cd.timer.Stop()
		cd.timer = nil
	}
	c.mu.Lock()
	delete(c.cards, cd.messageID)
	c.mu.Unlock()
	if !cd.streaming {
		return nil
	}
	return c.settings(ctx, cd, false)
}

// armFinish (re)starts the timer that finishes an idle card; cd.mu is held.
func (c *Channel) armFinish(cd *card) {
	if cd.timer != nil {
		cd.timer.Stop()
	}
	cd.timer = time.AfterFunc(c.finishIdle, func() { c.finishIdleCard(cd) })
}

// finishIdleCard turns streaming off on a card that saw no edit for a
// while. It stays known, so a late edit can turn streaming on again.
func (c *Channel) finishIdleCard(cd *card) {
	cd.mu.Lock()
	defer cd.mu.Unlock()
	if !cd.streaming {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.settings(ctx, cd, false); err != nil {
		c.log.Warn("feishu: finishing an idle streaming card failed", "message_id", cd.messageID, "err", c.redact.Error(err))
		return
	}
	c.log.Debug("feishu: idle streaming card finished", "message_id", cd.messageID)
}

// finishStream finishes the open cards of a stream in a chat (a reply
// longer than one card continues in a new one).
func (c *Channel) finishStream(chatID, streamID string) {
	if streamID == "" {
		return
	}
	var open []*card
	c.mu.Lock()
	for _, cd := range c.cards {
		if cd.chatID == chatID && cd.streamID == streamID {
			open = append(open, cd)
		}
	}
	c.mu.Unlock()
	for _, cd := range open {
		cd.mu.Lock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := c.finishLocked(ctx, cd); err != nil && !errors.Is(err, context.Canceled) {
			c.log.Warn("feishu: finishing a streaming card failed", "message_id", cd.messageID, "err", c.redact.Error(err))
		}
		cancel()
		cd.mu.Unlock()
	}
}
