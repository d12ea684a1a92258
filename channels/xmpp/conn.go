package xmpp

import (
	"context"
	"crypto/tls"
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"time"

	"mellium.im/sasl"
	"mellium.im/xmlstream"
	"mellium.im/xmpp"
	"mellium.im/xmpp/dial"
	"mellium.im/xmpp/stanza"

	"github.com/nanobot-go/nanobot/channels"
)

// ErrUnauthorized is returned by Run (as a channels.FatalError) when the
// server rejects the account's credentials.
var ErrUnauthorized = errors.New("xmpp: the server rejected the login; check channels.xmpp.jid and password")

// saslFailures are the SASL conditions no retry fixes (RFC 6120 6.5).
var saslFailures = []string{"not-authorized", "account-disabled", "credentials-expired", "invalid-authzid", "invalid-mechanism", "mechanism-too-weak", "encryption-required"}

// Run implements channels.Channel: connect, log in, announce presence, join
// the rooms, then read the stream until ctx ends. A broken connection is
// retried by a channels.Loop with backoff and jitter (health:
// reconnecting); a rejected login ends Run with a channels.FatalError.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	queue := make(chan inbound, 256)
	dctx, stopDelivery := context.WithCancel(ctx)
	delivered := make(chan struct{})
	go func() {
		defer close(delivered)
		c.deliverLoop(dctx, in, queue)
	}()
	defer func() {
		stopDelivery()
		<-delivered
	}()
	loop := &channels.Loop{
		Name: "xmpp", Log: c.log, Health: &c.health, Min: c.backoffMin, Max: c.backoffMax,
		Redact: c.redact.Error,
	}
	return loop.Run(ctx, func(ctx context.Context, up func()) error {
		return c.session1(ctx, queue, up)
	})
}

// session1 is one connection's life.
func (c *Channel) session1(ctx context.Context, queue chan<- inbound, up func()) error {
	sess, err := c.dial(ctx)
	if err != nil {
		return err
	}
	conn := sess.Conn()
	served := make(chan error, 1)
	go func() { served <- sess.Serve(c.handler(ctx, queue)) }()
	// Whatever happens below, the stream ends with the session and the
	// reading goroutine is waited for.
	stop := func() {
		c.setSession(nil, sess)
		_ = sess.Close()
		_ = conn.Close()
		<-served
	}
	// Available presence: the server routes chat messages to the bot's
	// resource from now on.
	if err := sess.Send(ctx, stanza.Presence{}.Wrap(nil)); err != nil {
		stop()
		return fmt.Errorf("initial presence: %w", err)
	}
	c.setSession(sess, nil)
	for _, r := range c.rooms {
		if err := c.join(ctx, sess, r); err != nil {
			if ctx.Err() != nil {
				stop()
				return nil
			}
			// A room that refuses the bot should not keep 1:1 chats down.
			c.log.Warn("xmpp: joining a room failed", "room", r.addr.String(), "err", c.redact.Error(err))
		}
	}
	up()
	c.log.Info("xmpp: connected", "jid", sess.LocalAddr().String(), "rooms", len(c.rooms))
	select {
	case <-ctx.Done():
		stop()
		return nil
	case err := <-served:
		served <- err
		stop()
		if err == nil {
			err = errors.New("the server closed the stream")
		}
		return fmt.Errorf("xmpp stream: %w", err)
	}
}

// setSession makes sess the one Send uses; with old set, it clears the
// session only if it is still old.
func (c *Channel) setSession(sess, old *xmpp.Session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old != nil && c.sess != old {
		return
	}
	c.sess = sess
	if sess == nil {
		for k, ch := range c.joins {
			delete(c.joins, k)
			select {
			case ch <- errors.New("connection closed"):
			default:
			}
		}
		clear(c.occupants)
	}
}

// dial connects and negotiates TLS, SASL and the resource.
func (c *Channel) dial(ctx context.Context) (*xmpp.Session, error) {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var conn net.Conn
	var err error
	switch {
	case c.cfg.Server != "":
		var d net.Dialer
		conn, err = d.DialContext(dctx, "tcp", c.cfg.Server)
		if err == nil && c.cfg.DirectTLS {
			tc := tls.Client(conn, c.tls.Clone())
			if err = tc.HandshakeContext(dctx); err != nil {
				_ = conn.Close()
			}
			conn = tc
		}
	default:
		d := dial.Dialer{NoTLS: !c.cfg.DirectTLS, TLSConfig: c.tls.Clone()}
		conn, err = d.Dial(dctx, "tcp", c.me)
	}
	where := c.cfg.Server
	if where == "" {
		where = c.me.Domainpart()
	}
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", where, err)
	}
	// Cancelling the negotiation closes the connection (the library only
	// watches ctx between steps).
	stopWatch := context.AfterFunc(dctx, func() { _ = conn.Close() })
	var state xmpp.SessionState
	features := []xmpp.StreamFeature{
		xmpp.SASL("", c.cfg.Password, sasl.ScramSha256, sasl.ScramSha1, sasl.Plain),
		xmpp.BindResource(),
	}
	if c.cfg.DirectTLS {
		state = xmpp.Secure
	} else {
		features = append([]xmpp.StreamFeature{xmpp.StartTLS(c.tls.Clone())}, features...)
	}
	sess, err := xmpp.NewSession(dctx, c.origin.Domain(), c.origin, conn, state, xmpp.NewNegotiator(func(*xmpp.Session, *xmpp.StreamConfig) xmpp.StreamConfig {
		return xmpp.StreamConfig{Features: features}
	}))
	if !stopWatch() {
		if err == nil {
			_ = sess.Close()
		}
		_ = conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("log in at %s: timed out", where)
	}
	if err != nil {
		_ = conn.Close()
		return nil, loginError(where, err)
	}
	return sess, nil
}

// loginError marks a rejected login fatal; anything else is retried.
func loginError(where string, err error) error {
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) {
		return fmt.Errorf("log in at %s: the server certificate is not trusted (set caFile to its CA): %w", where, err)
	}
	if cond := saslCondition(err); slices.Contains(saslFailures, cond) {
		return channels.Fatal(fmt.Errorf("%w (%s at %s)", ErrUnauthorized, cond, where))
	}
	return fmt.Errorf("log in at %s: %w", where, err)
}

// saslCondition returns the condition of a SASL <failure/> in err's chain
// ("not-authorized"), or "". mellium keeps its failure type internal and
// its message is the server's free text, so the condition is read by
// reflection from the type's exported Condition field.
func saslCondition(err error) string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		v := reflect.ValueOf(e)
		if v.Kind() != reflect.Struct || v.Type().PkgPath() != "mellium.im/xmpp/internal/saslerr" {
			continue
		}
		if f := v.FieldByName("Condition"); f.IsValid() && f.CanInterface() {
			if s, ok := f.Interface().(fmt.Stringer); ok {
				return s.String()
			}
		}
	}
	return ""
}

// join enters a room and waits for the room's answer: the bot's own
// presence (joined) or an error presence.
func (c *Channel) join(ctx context.Context, sess *xmpp.Session, r *room) error {
	done := make(chan error, 1)
	c.mu.Lock()
	c.joins[r.addr.String()] = done
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.joins[r.addr.String()] == done {
			delete(c.joins, r.addr.String())
		}
		c.mu.Unlock()
	}()
	// No history: the bot answers what is said from now on.
	parts := []xml.TokenReader{element("", "history", attrs("maxstanzas", "0"))}
	if r.password != "" {
		parts = append(parts, element("", "password", nil, text(r.password)))
	}
	payload := element(nsMUC, "x", nil, parts...)
	if err := sess.Send(ctx, stanza.Presence{To: r.occupant}.Wrap(payload)); err != nil {
		return fmt.Errorf("join presence: %w", err)
	}
	t := time.NewTimer(c.joinTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		if err == nil {
			c.log.Info("xmpp: joined room", "room", r.addr.String(), "nick", r.nick)
		}
		return err
	case <-t.C:
		return fmt.Errorf("no answer from the room within %s", c.joinTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// joined reports the room's answer to a pending join.
func (c *Channel) joined(room string, err error) {
	c.mu.Lock()
	ch := c.joins[room]
	delete(c.joins, room)
	c.mu.Unlock()
	if ch != nil {
		ch <- err
	}
}

// handler reads the stream. It runs on Serve's goroutine with the session
// locked: it decodes, answers IQs in place, and queues messages; it never
// calls the gateway or the session's send methods.
func (c *Channel) handler(ctx context.Context, queue chan<- inbound) xmpp.Handler {
	return xmpp.HandlerFunc(func(t xmlstream.TokenReadEncoder, start *xml.StartElement) error {
		switch start.Name.Local {
		case "message":
			var m message
			if err := decoder(t, start).Decode(&m); err != nil {
				c.log.Warn("xmpp: malformed message skipped", "err", err)
				return nil
			}
			c.onMessage(ctx, m, queue)
		case "presence":
			var p presence
			if err := decoder(t, start).Decode(&p); err != nil {
				c.log.Warn("xmpp: malformed presence skipped", "err", err)
				return nil
			}
			c.onPresence(p)
		case "iq":
			return c.onIQ(t, start)
		}
		return nil
	})
}

// decoder reads the stanza whose start element the session consumed.
func decoder(t xml.TokenReader, start *xml.StartElement) *xml.Decoder {
	return xml.NewTokenDecoder(xmlstream.MultiReader(xmlstream.Token(*start), t))
}
