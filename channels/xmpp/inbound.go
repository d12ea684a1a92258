package xmpp

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"mellium.im/xmlstream"
	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// Namespaces of the extensions the adapter reads or writes.
const (
	nsCorrect    = "urn:xmpp:message-correct:0"
	nsChatStates = "http://jabber.org/protocol/chatstates"
	nsDelay      = "urn:xmpp:delay"
	nsOOB        = "jabber:x:oob"
	nsMUC        = "http://jabber.org/protocol/muc"
	nsDiscoInfo  = "http://jabber.org/protocol/disco#info"
	nsPing       = "urn:xmpp:ping"
)

// message is an incoming message stanza with the payloads the adapter
// reads. A delay whose stamp is not a time fails the decoding: the stanza
// is malformed and skipped with a warning.
type message struct {
	stanza.Message
	Body    []string `xml:"body"`
	Replace *struct {
		ID string `xml:"id,attr"`
	} `xml:"urn:xmpp:message-correct:0 replace"`
	Delay *struct {
		Stamp time.Time `xml:"stamp,attr"`
	} `xml:"urn:xmpp:delay delay"`
	OOB []struct {
		URL  string `xml:"url"`
		Desc string `xml:"desc"`
	} `xml:"jabber:x:oob x"`
}

// body is the message text: the first body (clients send one; alternatives
// in other languages are not shown).
func (m message) body() string {
	if len(m.Body) == 0 {
		return ""
	}
	return m.Body[0]
}

// presence is an incoming presence, with the MUC user payload.
type presence struct {
	stanza.Presence
	X *struct {
		Item struct {
			JID  string `xml:"jid,attr"`
			Role string `xml:"role,attr"`
		} `xml:"item"`
		Status []struct {
			Code int `xml:"code,attr"`
		} `xml:"status"`
	} `xml:"http://jabber.org/protocol/muc#user x"`
	Error *struct {
		Type string `xml:"type,attr"`
		Any  []struct {
			XMLName xml.Name
		} `xml:",any"`
	} `xml:"error"`
}

func (p presence) status(code int) bool {
	return p.X != nil && slices.ContainsFunc(p.X.Status, func(s struct {
		Code int `xml:"code,attr"`
	}) bool {
		return s.Code == code
	})
}

// inbound is a message queued for delivery.
type inbound struct {
	msg      message
	sender   string // bare JID, or room/nick when the room hides real JIDs
	room     *room
	received time.Time
}

// onPresence tracks room joins and who is behind each nick.
func (c *Channel) onPresence(p presence) {
	r := c.room(p.From)
	if r == nil {
		return
	}
	nick := p.From.Resourcepart()
	self := nick == r.nick || p.status(110)
	switch p.Type {
	case stanza.ErrorPresence:
		if self || nick == "" {
			cond := "error"
			if p.Error != nil && len(p.Error.Any) > 0 {
				cond = p.Error.Any[0].XMLName.Local
			}
			c.joined(r.addr.String(), fmt.Errorf("the room refused the join: %s", cond))
		}
	case stanza.UnavailablePresence:
		c.mu.Lock()
		delete(c.occupants[r.addr.String()], nick)
		c.mu.Unlock()
		if self {
			c.log.Warn("xmpp: the bot left a room (kicked, banned or the room closed)", "room", r.addr.String())
		}
	case "":
		if p.X != nil && p.X.Item.JID != "" {
			if real, err := jid.Parse(p.X.Item.JID); err == nil {
				c.mu.Lock()
				if c.occupants[r.addr.String()] == nil {
					c.occupants[r.addr.String()] = map[string]string{}
				}
				c.occupants[r.addr.String()][nick] = real.Bare().String()
				c.mu.Unlock()
			}
		}
		if self {
			c.joined(r.addr.String(), nil)
		}
	}
}

// onMessage filters a message and queues what is for the bot. It runs on
// the stream's goroutine: a full queue holds the stream back.
func (c *Channel) onMessage(ctx context.Context, m message, queue chan<- inbound) {
	log := c.log.With("from", m.From.String(), "type", string(m.Type))
	switch {
	case m.Type == stanza.ErrorMessage:
		log.Debug("xmpp: error message ignored")
		return
	case strings.TrimSpace(m.body()) == "" && len(m.OOB) == 0:
		return // chat states, receipts, room subjects
	case m.Replace != nil:
		log.Debug("xmpp: correction of an earlier message ignored")
		return
	}
	in := inbound{msg: m, received: time.Now()}
	r := c.room(m.From)
	switch m.Type {
	case stanza.GroupChatMessage:
		if r == nil {
			log.Debug("xmpp: message from a room not configured ignored")
			return
		}
		nick := m.From.Resourcepart()
		if nick == "" || nick == r.nick {
			return // the room itself, or the bot's own echo
		}
		if m.Delay != nil {
			return // history the room replays on join
		}
		in.room, in.sender = r, m.From.String()
		c.mu.Lock()
		if real := c.occupants[r.addr.String()][nick]; real != "" {
			in.sender = real
		}
		c.mu.Unlock()
	case stanza.ChatMessage, stanza.NormalMessage:
		if r != nil {
			log.Info("xmpp: private message through a room ignored (not supported)")
			return
		}
		if m.From.Bare().Equal(c.me) {
			return // another client of the bot's own account (carbons)
		}
		in.sender = m.From.Bare().String()
	default:
		return
	}
	select {
	case queue <- in:
	case <-ctx.Done():
	}
}

// deliverLoop delivers queued messages, one after another, until ctx ends.
func (c *Channel) deliverLoop(ctx context.Context, in channels.Inbox, queue <-chan inbound) {
	for {
		select {
		case <-ctx.Done():
			return
		case q := <-queue:
			m, ok := c.toInbound(q)
			if !ok {
				continue
			}
			// Without stream management nothing is acknowledged and
			// nothing is offered again: a message the gateway did not take
			// is lost, and reported so.
			if err := channels.DeliverRetrying(ctx, in, m, c.log, c.backoffMin, c.backoffMax); err != nil && !errors.Is(err, channels.ErrDenied) {
				channels.ReportLost(in, m, err, c.log)
			}
		}
	}
}

// toInbound converts a queued message; false for a room message the group
// policy does not pass.
func (c *Channel) toInbound(q inbound) (bus.Inbound, bool) {
	text := strings.TrimSpace(q.msg.body())
	m := bus.Inbound{
		Channel:    c.Name(),
		SenderID:   q.sender,
		ChatID:     q.msg.From.Bare().String(),
		MessageID:  q.msg.ID,
		ReceivedAt: q.received,
		Metadata:   bus.Metadata{"from": q.msg.From.String()},
	}
	if q.room != nil {
		m.IsGroup = true
		addressed := mentions(text, q.room.nick)
		if !c.cfg.GroupPolicy.Admits(true, addressed, q.room.addr.String(), c.cfg.GroupAllowFrom) {
			c.log.Debug("xmpp: room message not for the bot skipped", "room", q.room.addr.String())
			return bus.Inbound{}, false
		}
		text = stripMention(text, q.room.nick)
	}
	for _, o := range q.msg.OOB {
		if o.URL == "" || strings.Contains(text, o.URL) {
			continue
		}
		line := "[file: " + o.URL
		if o.Desc != "" {
			line += " (" + o.Desc + ")"
		}
		text = strings.TrimSpace(text + "\n" + line + "]")
	}
	if text == "" {
		return bus.Inbound{}, false
	}
	m.Content = text
	return m, true
}

// mentions reports whether text names nick as a word ("bot: hi", "hi bot",
// "@bot").
func mentions(text, nick string) bool {
	re := regexp.MustCompile(`(?i)(^|[^\pL\pN_])@?` + regexp.QuoteMeta(nick) + `($|[^\pL\pN_])`)
	return re.MatchString(text)
}

// stripMention removes a leading "bot:", "bot," or "@bot " so the agent
// sees what was asked.
func stripMention(text, nick string) string {
	t := strings.TrimPrefix(text, "@")
	if len(t) >= len(nick) && strings.EqualFold(t[:len(nick)], nick) {
		rest := t[len(nick):]
		if trimmed := strings.TrimLeft(rest, ":, "); trimmed != rest || rest == "" {
			return trimmed
		}
	}
	return text
}

// onIQ answers disco#info and pings; the session answers other requests
// with service-unavailable.
func (c *Channel) onIQ(t xmlstream.TokenReadEncoder, start *xml.StartElement) error {
	iq, err := stanza.NewIQ(*start)
	if err != nil || iq.Type != stanza.GetIQ {
		return nil
	}
	var payload struct {
		XMLName xml.Name
	}
	d := xml.NewTokenDecoder(t)
	for {
		tok, err := d.Token()
		if err != nil {
			return nil
		}
		if se, ok := tok.(xml.StartElement); ok {
			payload.XMLName = se.Name
			if err := d.Skip(); err != nil {
				return nil
			}
			break
		}
	}
	switch payload.XMLName.Space {
	case nsPing:
		_, err := xmlstream.Copy(t, iq.Result(nil))
		return err
	case nsDiscoInfo:
		parts := []xml.TokenReader{element("", "identity", attrs("category", "client", "type", "bot", "name", "nanobot"))}
		features := []string{nsDiscoInfo, nsPing, nsOOB}
		if c.cfg.corrections() {
			features = append(features, nsCorrect)
		}
		if c.cfg.chatStates() {
			features = append(features, nsChatStates)
		}
		for _, f := range features {
			parts = append(parts, element("", "feature", attrs("var", f)))
		}
		_, err := xmlstream.Copy(t, iq.Result(element(nsDiscoInfo, "query", nil, parts...)))
		return err
	}
	return nil
}

// element builds <local xmlns=ns attrs...>children</local> as tokens (ns
// "" inherits the parent's namespace).
func element(ns, local string, attr []xml.Attr, children ...xml.TokenReader) xml.TokenReader {
	return xmlstream.Wrap(xmlstream.MultiReader(children...), xml.StartElement{Name: xml.Name{Space: ns, Local: local}, Attr: attr})
}

// text is character data.
func text(s string) xml.TokenReader { return xmlstream.Token(xml.CharData(s)) }

// attrs pairs names and values into attributes.
func attrs(kv ...string) []xml.Attr {
	out := make([]xml.Attr, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, xml.Attr{Name: xml.Name{Local: kv[i]}, Value: kv[i+1]})
	}
	return out
}

// multi joins token readers one after another.
func multi(parts []xml.TokenReader) xml.TokenReader { return xmlstream.MultiReader(parts...) }
