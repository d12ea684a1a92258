package teams

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// maxBodyBytes bounds one activity.
const maxBodyBytes = 1 << 20

// activity is the part of a Bot Framework activity the channel reads.
type activity struct {
	Type       string `json:"type"`
	ID         string `json:"id"`
	ServiceURL string `json:"serviceUrl"`
	ChannelID  string `json:"channelId"`
	Text       string `json:"text"`
	ReplyToID  string `json:"replyToId"`
	From       struct {
		ID          string `json:"id"`
		Name        string `json:"name"`
		AADObjectID string `json:"aadObjectId"`
	} `json:"from"`
	Conversation struct {
		ID               string `json:"id"`
		ConversationType string `json:"conversationType"`
		TenantID         string `json:"tenantId"`
	} `json:"conversation"`
	Recipient botMember `json:"recipient"`
	Entities  []struct {
		Type      string `json:"type"`
		Text      string `json:"text"`
		Mentioned struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"mentioned"`
	} `json:"entities"`
	ChannelData struct {
		Tenant struct {
			ID string `json:"id"`
		} `json:"tenant"`
	} `json:"channelData"`
}

// WebhookHandler implements channels.WebhookHandler: the bot's messaging
// endpoint. The token is verified before the body is parsed (401); while
// Run is not running the answer is 503; an activity from another tenant
// (single-tenant bots) gets 403; a message the gateway could not take gets
// 500 so the Connector may send it again.
func (c *Channel) WebhookHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !channels.AllowPost(w, r) {
			return
		}
		in, ok := channels.Serving(w, &c.mu, &c.inbox)
		if !ok {
			return
		}
		claimURL, err := c.verify(r.Context(), r.Header.Get("Authorization"))
		if err != nil {
			c.log.Warn("teams: request with an invalid token refused", "remote", r.RemoteAddr, "err", err)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		body, ok := channels.ReadBody(w, r, maxBodyBytes)
		if !ok {
			return
		}
		var a activity
		if err := json.Unmarshal(body, &a); err != nil {
			c.log.Warn("teams: unreadable activity skipped", "bytes", len(body), "err", err)
			w.WriteHeader(http.StatusOK)
			return
		}
		if !sameServiceURL(claimURL, a.ServiceURL) {
			c.log.Warn("teams: activity whose serviceUrl differs from its token's refused", "remote", r.RemoteAddr)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if c.cfg.TenantID != "" && !strings.EqualFold(tenantOf(a), c.cfg.TenantID) {
			c.log.Warn("teams: activity from another tenant refused", "tenant_id", tenantOf(a))
			http.Error(w, "wrong tenant", http.StatusForbidden)
			return
		}
		if err := c.activity(r.Context(), in, a); err != nil {
			if r.Context().Err() == nil {
				http.Error(w, "the gateway could not take the message", http.StatusInternalServerError)
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// sameServiceURL compares the claim with the activity's service URL,
// ignoring a trailing slash and the host's case.
func sameServiceURL(claim, activity string) bool {
	norm := func(s string) string { return strings.ToLower(strings.TrimRight(strings.TrimSpace(s), "/")) }
	return claim != "" && norm(claim) == norm(activity)
}

func tenantOf(a activity) string {
	if a.Conversation.TenantID != "" {
		return a.Conversation.TenantID
	}
	return a.ChannelData.Tenant.ID
}

// activity handles one verified activity; it returns an error only when
// the gateway could not take its message.
func (c *Channel) activity(ctx context.Context, in channels.Inbox, a activity) error {
	switch a.Type {
	case "message":
	case "conversationUpdate", "installationUpdate":
		c.log.Info("teams: conversation update", "type", a.Type, "conversation_type", a.Conversation.ConversationType)
		return nil
	default:
		c.log.Debug("teams: activity ignored", "type", a.Type)
		return nil
	}
	if a.ID == "" || a.Conversation.ID == "" || a.From.ID == "" || a.ServiceURL == "" {
		c.log.Warn("teams: message without id, conversation, sender or serviceUrl skipped", "activity_id", a.ID)
		return nil
	}
	if a.From.ID == a.Recipient.ID {
		return nil
	}
	isGroup := a.Conversation.ConversationType != "personal"
	text, addressed := stripMentions(a)
	if !c.cfg.GroupPolicy.Admits(isGroup, addressed, a.Conversation.ID, c.cfg.GroupAllowFrom) {
		c.log.Debug("teams: group message not for the bot skipped", "conversation_type", a.Conversation.ConversationType)
		return nil
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	c.mu.Lock()
	c.services[a.Conversation.ID] = a.ServiceURL
	c.bots[a.Conversation.ID] = a.Recipient
	c.mu.Unlock()
	sender := a.From.ID
	if a.From.AADObjectID != "" {
		sender += "|" + a.From.AADObjectID
	}
	meta := bus.Metadata{"service_url": a.ServiceURL, "conversation_type": a.Conversation.ConversationType, "activity_id": a.ID}
	if t := tenantOf(a); t != "" {
		meta["tenant_id"] = t
	}
	if a.From.Name != "" {
		meta["from_name"] = a.From.Name
	}
	m := bus.Inbound{Channel: c.Name(), SenderID: sender, ChatID: a.Conversation.ID, MessageID: a.ID, Content: text,
		IsGroup: isGroup, Metadata: meta, ReceivedAt: time.Now()}
	err := in.Deliver(ctx, m)
	if err == nil || errors.Is(err, channels.ErrDenied) {
		return nil
	}
	c.log.Warn("teams: the gateway did not take a message", "conversation_type", a.Conversation.ConversationType, "activity_id", a.ID, "err", err)
	return err
}

// stripMentions removes the bot's <at>…</at> mentions from the text and
// keeps other mentions as their names; it reports whether the bot was
// mentioned.
func stripMentions(a activity) (string, bool) {
	text, addressed := a.Text, false
	for _, e := range a.Entities {
		if e.Type != "mention" || e.Text == "" {
			continue
		}
		if e.Mentioned.ID == a.Recipient.ID && a.Recipient.ID != "" {
			addressed = true
			text = strings.ReplaceAll(text, e.Text, "")
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(e.Text, "<at>"), "</at>")
		text = strings.ReplaceAll(text, e.Text, "@"+name)
	}
	return strings.TrimSpace(text), addressed
}
