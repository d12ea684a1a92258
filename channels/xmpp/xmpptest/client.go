package xmpptest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/xml"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"mellium.im/sasl"
	"mellium.im/xmlstream"
	"mellium.im/xmpp"
	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/ping"
	"mellium.im/xmpp/stanza"
)

// Message is a message a Client received.
type Message struct {
	From, Type, ID string
	Body           string
	// Replace is the id of the message this one corrects (XEP-0308).
	Replace string
	// Composing is a "composing" chat state.
	Composing bool
	At        time.Time
}

// Client is a person on the server, logged in over StartTLS.
type Client struct {
	JID  jid.JID
	sess *xmpp.Session
	done chan struct{}

	mu     sync.Mutex
	msgs   []Message
	joined map[string]bool // room/nick we are in
}

// Dial logs user in at the server; the session ends with t.
func (s *Server) Dial(t testing.TB, user, password string) *Client {
	t.Helper()
	c, err := s.dial(user, password)
	if err != nil {
		t.Fatalf("xmpptest: log in as %s: %v", user, err)
	}
	t.Cleanup(c.Close)
	return c
}

func (s *Server) dial(user, password string) (*Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	pem, err := os.ReadFile(s.CAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	origin := jid.MustParse(user + "@" + Domain + "/test")
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", s.Addr)
	if err != nil {
		return nil, err
	}
	sess, err := xmpp.NewClientSession(ctx, origin, conn,
		xmpp.StartTLS(&tls.Config{ServerName: Domain, RootCAs: pool, MinVersion: tls.VersionTLS12}),
		xmpp.SASL("", password, sasl.ScramSha256, sasl.ScramSha1),
		xmpp.BindResource(),
	)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	c := &Client{JID: sess.LocalAddr(), sess: sess, done: make(chan struct{}), joined: map[string]bool{}}
	go func() {
		defer close(c.done)
		_ = sess.Serve(xmpp.HandlerFunc(c.handle))
	}()
	if err := sess.Send(ctx, stanza.Presence{}.Wrap(nil)); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close ends the session.
func (c *Client) Close() {
	_ = c.sess.Close()
	_ = c.sess.Conn().Close()
	<-c.done
}

type inMessage struct {
	stanza.Message
	Body    string `xml:"body"`
	Replace struct {
		ID string `xml:"id,attr"`
	} `xml:"urn:xmpp:message-correct:0 replace"`
	Composing *struct{} `xml:"http://jabber.org/protocol/chatstates composing"`
}

type inPresence struct {
	stanza.Presence
	X *struct {
		Status []struct {
			Code int `xml:"code,attr"`
		} `xml:"status"`
	} `xml:"http://jabber.org/protocol/muc#user x"`
}

func (c *Client) handle(t xmlstream.TokenReadEncoder, start *xml.StartElement) error {
	// The decoder must see the start element the session consumed.
	d := xml.NewTokenDecoder(xmlstream.MultiReader(xmlstream.Token(*start), t))
	switch start.Name.Local {
	case "message":
		var m inMessage
		if err := d.Decode(&m); err != nil {
			return nil
		}
		c.mu.Lock()
		c.msgs = append(c.msgs, Message{From: m.From.String(), Type: string(m.Type), ID: m.ID, Body: m.Body, Replace: m.Replace.ID, Composing: m.Composing != nil, At: time.Now()})
		c.mu.Unlock()
	case "presence":
		var p inPresence
		err := d.Decode(&p)
		if err != nil || p.X == nil {
			return nil
		}
		for _, s := range p.X.Status {
			if s.Code == 110 {
				c.mu.Lock()
				c.joined[p.From.String()] = p.Type != stanza.UnavailablePresence
				c.mu.Unlock()
			}
		}
	}
	return nil
}

// Messages returns what the client received so far.
func (c *Client) Messages() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Message(nil), c.msgs...)
}

// Send sends a message of type typ ("chat", "groupchat") and returns its
// id. extra is raw XML appended inside the message (may be "").
func (c *Client) Send(t testing.TB, to, typ, body, extra string) string {
	t.Helper()
	id := fmt.Sprintf("m%d", time.Now().UnixNano())
	raw := fmt.Sprintf(`<message xmlns="jabber:client" to=%q type=%q id=%q><body>%s</body>%s</message>`, to, typ, id, xmlEscape(body), extra)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.sess.Send(ctx, rawXML(raw)); err != nil {
		t.Fatalf("xmpptest: send: %v", err)
	}
	return id
}

// Join enters room (a bare room JID) as nick and waits until the room
// confirmed it.
func (c *Client) Join(t testing.TB, room, nick string) {
	t.Helper()
	occ := room + "/" + nick
	raw := fmt.Sprintf(`<presence xmlns="jabber:client" to=%q><x xmlns="http://jabber.org/protocol/muc"><history maxstanzas="0"/></x></presence>`, occ)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.sess.Send(ctx, rawXML(raw)); err != nil {
		t.Fatalf("xmpptest: join %s: %v", room, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		ok := c.joined[occ]
		c.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("xmpptest: %s did not confirm joining %s", c.JID, room)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Sync waits until everything the server sent this client before now was
// read: a ping round trip on the ordered stream.
func (c *Client) Sync(ctx context.Context) error {
	return ping.Send(ctx, c.sess, jid.MustParse(Domain))
}
