package email

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-message/charset"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/bus"
)

// session is one IMAP connection: log in, select the mailbox, then handle
// unseen mail and wait for more (IDLE or polling) until the connection
// fails or ctx ends. connected reports whether it got as far as selecting.
func (c *Channel) session(ctx context.Context, in channels.Inbox) (connected bool, err error) {
	wake := make(chan struct{}, 1)
	client, err := c.dialIMAP(ctx, &imapclient.Options{
		TLSConfig:   c.tlsFor(c.cfg.IMAPHost),
		WordDecoder: wordDecoder,
		UnilateralDataHandler: &imapclient.UnilateralDataHandler{
			Mailbox: func(d *imapclient.UnilateralDataMailbox) {
				if d.NumMessages != nil { // EXISTS: new mail (or an expunge elsewhere)
					select {
					case wake <- struct{}{}:
					default:
					}
				}
			},
		},
	})
	if err != nil {
		return false, err
	}
	defer client.Close()
	// imapclient has no contexts: closing the connection ends any command.
	stop := context.AfterFunc(ctx, func() { _ = client.Close() })
	defer stop()

	if err := client.Login(c.cfg.IMAPUsername, c.cfg.IMAPPassword).Wait(); err != nil {
		var ie *imap.Error
		if errors.As(err, &ie) && ie.Type == imap.StatusResponseTypeNo {
			return false, ErrAuth
		}
		return false, fmt.Errorf("login: %w", err)
	}
	sel, err := client.Select(c.cfg.mailbox(), nil).Wait()
	if err != nil {
		return false, fmt.Errorf("select %q: %w", c.cfg.mailbox(), err)
	}
	idle := client.Caps().Has(imap.CapIdle)
	c.setHealth(channels.StateConnected, nil)
	mode := "poll"
	if idle {
		mode = "idle"
	}
	c.log.Info("email: connected", "mailbox", c.cfg.mailbox(), "mode", mode, "messages", sel.NumMessages)

	w := &watch{client: client, validity: sel.UIDValidity, in: in}
	for {
		more, err := c.handleUnseen(ctx, w)
		if err != nil {
			return true, err
		}
		if more {
			continue
		}
		if err := c.wait(ctx, client, idle, wake); err != nil {
			return true, err
		}
	}
}

// wordDecoder decodes RFC 2047 words in any charset go-message knows.
var wordDecoder = &mime.WordDecoder{CharsetReader: charset.Reader}

// tlsFor is the TLS config for a server name.
func (c *Channel) tlsFor(host string) *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.tlsConfig != nil {
		cfg = c.tlsConfig.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	return cfg
}

// dialIMAP connects with implicit TLS, STARTTLS or (allowInsecure, plain
// imapUseSsl false) no TLS at all, and waits for the greeting.
func (c *Channel) dialIMAP(ctx context.Context, opts *imapclient.Options) (*imapclient.Client, error) {
	addr := net.JoinHostPort(c.cfg.IMAPHost, strconv.Itoa(c.cfg.IMAPPort))
	dctx, cancel := context.WithTimeout(ctx, c.dialTimeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	// Bound the greeting and the TLS handshake; commands set their own
	// deadlines.
	stop := context.AfterFunc(dctx, func() { _ = conn.Close() })
	defer stop()
	var client *imapclient.Client
	switch {
	case c.cfg.IMAPUseSSL:
		tc := tls.Client(conn, opts.TLSConfig)
		if err := tc.HandshakeContext(dctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("tls with %s: %w", addr, err)
		}
		client = imapclient.New(tc, opts)
	case c.cfg.AllowInsecure:
		client = imapclient.New(conn, opts)
	default:
		client, err = imapclient.NewStartTLS(conn, opts)
		if err != nil {
			return nil, fmt.Errorf("starttls with %s: %w", addr, err)
		}
	}
	if err := client.WaitGreeting(); err != nil {
		client.Close()
		return nil, fmt.Errorf("greeting from %s: %w", addr, err)
	}
	if !stop() {
		client.Close()
		return nil, fmt.Errorf("connect to %s: %w", addr, dctx.Err())
	}
	return client, nil
}

// wait blocks until there may be new mail: an EXISTS during IDLE, the
// recheck interval, or the poll interval without IDLE.
func (c *Channel) wait(ctx context.Context, client *imapclient.Client, idle bool, wake <-chan struct{}) error {
	if !idle {
		t := time.NewTimer(c.pollInterval)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-client.Closed():
			return errors.New("connection closed")
		case <-wake:
		case <-t.C:
		}
		return nil
	}
	select { // mail that arrived while we were busy
	case <-wake:
		return nil
	default:
	}
	cmd, err := client.Idle()
	if err != nil {
		return fmt.Errorf("idle: %w", err)
	}
	t := time.NewTimer(c.idleRecheck)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-client.Closed():
	case <-wake:
	case <-t.C:
	}
	closeErr := cmd.Close()
	waitErr := cmd.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	if closeErr != nil {
		return fmt.Errorf("idle: %w", closeErr)
	}
	if waitErr != nil {
		return fmt.Errorf("idle: %w", waitErr)
	}
	return nil
}

// watch is the state of one selected mailbox.
type watch struct {
	client   *imapclient.Client
	validity uint32
	in       channels.Inbox
}

func (w *watch) key(uid imap.UID) string {
	return strconv.FormatUint(uint64(w.validity), 10) + "/" + strconv.FormatUint(uint64(uid), 10)
}

// headerSection is the header fetched to decide whether a mail is read.
var headerSection = &imap.FetchItemBodySection{Specifier: imap.PartSpecifierHeader, Peek: true}

// handleUnseen handles the unseen mail from allowed senders not dealt with
// yet, oldest first, up to one batch. more reports that another batch is
// waiting.
func (c *Channel) handleUnseen(ctx context.Context, w *watch) (more bool, err error) {
	data, err := w.client.UIDSearch(c.searchCriteria(), nil).Wait()
	if err != nil {
		return false, fmt.Errorf("search: %w", err)
	}
	var uids []imap.UID
	c.mu.Lock()
	for _, uid := range data.AllUIDs() {
		if !c.handled.has(w.key(uid)) {
			uids = append(uids, uid)
		}
	}
	c.mu.Unlock()
	if len(uids) == 0 {
		return false, nil
	}
	slices.Sort(uids)
	if len(uids) > c.batch {
		uids, more = uids[:c.batch], true
	}
	msgs, err := w.client.Fetch(imap.UIDSetNum(uids...), &imap.FetchOptions{
		UID: true, RFC822Size: true, BodySection: []*imap.FetchItemBodySection{headerSection},
	}).Collect()
	if err != nil {
		return false, fmt.Errorf("fetch headers: %w", err)
	}
	slices.SortFunc(msgs, func(a, b *imapclient.FetchMessageBuffer) int { return cmp.Compare(a.UID, b.UID) })
	for _, m := range msgs {
		if m.UID == 0 {
			continue
		}
		if err := c.handleOne(ctx, w, m.UID, m.FindBodySection(headerSection), m.RFC822Size); err != nil {
			return false, err
		}
	}
	return more, nil
}

// searchCriteria is UNSEEN, narrowed on the server to the allowFrom
// senders (a substring match; inbound.go checks the address exactly).
func (c *Channel) searchCriteria() *imap.SearchCriteria {
	crit := &imap.SearchCriteria{NotFlag: []imap.Flag{imap.FlagSeen}}
	if c.allowAll || len(c.allow) == 0 {
		return crit
	}
	var from []imap.SearchCriteria
	for _, a := range slices.Sorted(maps.Keys(c.allow)) {
		from = append(from, imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "From", Value: a}}})
	}
	for len(from) > 1 { // OR is binary: fold pairwise
		var next []imap.SearchCriteria
		for i := 0; i+1 < len(from); i += 2 {
			next = append(next, imap.SearchCriteria{Or: [][2]imap.SearchCriteria{{from[i], from[i+1]}}})
		}
		if len(from)%2 == 1 {
			next = append(next, from[len(from)-1])
		}
		from = next
	}
	crit.And(&from[0])
	return crit
}

// maxFetchBytes bounds the mail fetched whole; a bigger one reaches the
// agent as its subject and a note.
const maxFetchBytes = 32 << 20

// handleOne decides about one unseen mail from its header, fetches and
// delivers it when it is for the agent, and acknowledges it once the Inbox
// took (or refused) it. It returns only connection errors.
func (c *Channel) handleOne(ctx context.Context, w *watch, uid imap.UID, rawHeader []byte, size int64) error {
	key := w.key(uid)
	done := func() {
		c.mu.Lock()
		c.handled.add(key)
		c.mu.Unlock()
	}
	h, err := parseHeader(rawHeader)
	if err != nil {
		c.log.Warn("email: unreadable mail header; mail skipped", "uid", uint32(uid), "err", err)
		done()
		return nil
	}
	if skip, why := c.screen(h); skip {
		if why != "" {
			c.log.Info("email: mail left unread", "uid", uint32(uid), "sender", h.from, "reason", why)
		}
		done()
		return nil
	}
	var raw []byte
	if size <= maxFetchBytes {
		body := &imap.FetchItemBodySection{Peek: true}
		msgs, err := w.client.Fetch(imap.UIDSetNum(uid), &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{body}}).Collect()
		if err != nil {
			return fmt.Errorf("fetch mail %d: %w", uid, err)
		}
		if len(msgs) == 0 { // expunged meanwhile
			done()
			return nil
		}
		raw = msgs[0].FindBodySection(body)
	}
	msg, err := c.toInbound(h, raw, size, key)
	if err != nil {
		c.log.Warn("email: malformed mail skipped", "uid", uint32(uid), "sender", h.from, "err", err)
		done()
		return nil
	}
	switch err := c.deliver(ctx, w.in, msg); {
	case err == nil:
		c.remember(msg)
	case errors.Is(err, channels.ErrDenied):
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		return nil // left unseen: retried at the next check
	}
	done()
	return c.ack(w.client, uid)
}

// ack marks a handled mail seen and/or moves it, as configured.
func (c *Channel) ack(client *imapclient.Client, uid imap.UID) error {
	set := imap.UIDSetNum(uid)
	if c.cfg.MarkSeen {
		store := &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagSeen}}
		if err := client.Store(set, store, nil).Close(); err != nil {
			return fmt.Errorf("mark mail %d seen: %w", uid, err)
		}
	}
	if mv := c.cfg.moveTo(); mv != "" {
		if _, err := client.Move(set, mv).Wait(); err != nil {
			var ie *imap.Error
			if errors.As(err, &ie) { // the folder is missing, say: keep going, say why
				c.log.Error("email: moving a handled mail failed", "uid", uint32(uid), "folder", mv, "err", err)
				return nil
			}
			return fmt.Errorf("move mail %d to %q: %w", uid, mv, err)
		}
	}
	return nil
}

// deliver hands a message to the inbox, retrying a failure other than a
// denial a few times.
func (c *Channel) deliver(ctx context.Context, inbox channels.Inbox, m bus.Inbound) error {
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		err = inbox.Deliver(ctx, m)
		if err == nil || errors.Is(err, channels.ErrDenied) || ctx.Err() != nil {
			return err
		}
		c.log.Warn("email: delivering a mail failed; retrying", "chat_id", m.ChatID, "err", err, "attempt", attempt)
		if c.sleep(ctx, attempt) != nil {
			return ctx.Err()
		}
	}
	c.log.Error("email: delivering a mail failed; left unseen for the next check", "chat_id", m.ChatID, "err", err)
	return err
}
