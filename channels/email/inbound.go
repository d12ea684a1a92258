// Inbound: the IMAP session (IDLE, or polling where the server has no
// IDLE) and the mail it takes in.

package email

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
	"github.com/nanobot-go/nanobot/internal/untrusted"
)

// Run implements channels.Channel: watch the mailbox until ctx ends,
// reconnecting with backoff and jitter after failures (a channels.Loop). A
// login the server refuses ends Run with a channels.FatalError (ErrLogin):
// the channel stays failed until a reload or restart.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	skipped := map[imap.UID]bool{} // mail left alone (strangers, robots), per connection's mailbox
	loop := &channels.Loop{
		Name: "email", Log: c.log, Health: &c.health, Min: c.backoffMin, Max: c.backoffMax,
		Redact: c.redact.Error,
	}
	return loop.Run(ctx, func(ctx context.Context, up func()) error {
		return c.session(ctx, in, skipped, up)
	})
}

// ErrLogin is returned by Run (as a channels.FatalError) when the IMAP
// server refuses the username or password.
var ErrLogin = errors.New("email: the IMAP server refused the login; check channels.email.imapUsername and imapPassword")

// session is one IMAP connection: login, select, then process unseen mail
// and wait for more (IDLE or polling) until an error or ctx ends.
func (c *Channel) session(ctx context.Context, in channels.Inbox, skipped map[imap.UID]bool, connected func()) error {
	newMail := make(chan struct{}, 1)
	opts := &imapclient.Options{
		UnilateralDataHandler: &imapclient.UnilateralDataHandler{
			Mailbox: func(d *imapclient.UnilateralDataMailbox) {
				if d.NumMessages != nil {
					select {
					case newMail <- struct{}{}:
					default:
					}
				}
			},
		},
		TLSConfig: &tls.Config{ServerName: c.cfg.IMAPHost, RootCAs: c.roots},
	}
	cli, err := c.dialIMAP(opts)
	if err != nil {
		return err
	}
	defer cli.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-ctx.Done():
			cli.Close() // unblocks any command in flight
		case <-stop:
		}
	})
	defer func() { close(stop); wg.Wait() }()

	if err := cli.Login(c.cfg.IMAPUsername, c.cfg.IMAPPassword).Wait(); err != nil {
		// A NO or BAD answer refuses these credentials; only UNAVAILABLE
		// says to try again later.
		var ie *imap.Error
		if errors.As(err, &ie) && ie.Code != imap.ResponseCodeUnavailable {
			return channels.Fatal(fmt.Errorf("%w: %w", ErrLogin, err))
		}
		return fmt.Errorf("login: %w", err)
	}
	if _, err := cli.Select(c.cfg.IMAPMailbox, nil).Wait(); err != nil {
		return fmt.Errorf("select %s: %w", c.cfg.IMAPMailbox, err)
	}
	clear(skipped) // UIDs may have changed while we were away
	connected()
	idle := cli.Caps().Has(imap.CapIdle)
	c.log.Info("email: connected", "mailbox", c.cfg.IMAPMailbox, "idle", idle)
	for {
		if err := c.processUnseen(ctx, cli, in, skipped); err != nil {
			return err
		}
		if idle {
			if err := c.waitIdle(ctx, cli, newMail); err != nil {
				return err
			}
		} else {
			t := time.NewTimer(time.Duration(c.cfg.PollIntervalS) * time.Second)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
	}
}

func (c *Channel) dialIMAP(opts *imapclient.Options) (*imapclient.Client, error) {
	addr := net.JoinHostPort(c.cfg.IMAPHost, strconv.Itoa(c.cfg.IMAPPort))
	if c.cfg.IMAPUseSSL {
		return imapclient.DialTLS(addr, opts)
	}
	cli, err := imapclient.DialStartTLS(addr, opts)
	if err != nil && c.cfg.AllowInsecure {
		return imapclient.DialInsecure(addr, opts)
	}
	return cli, err
}

// waitIdle idles until the server announces mail, ctx ends or the IDLE
// has run for pollIntervalS. A NOOP first collects what arrived since the
// last search (some servers announce, during IDLE, only what arrives
// after it started); the periodic renewal bounds how long a missed
// announcement can delay a mail, and keeps the IDLE under the 30 minutes
// after which servers drop it.
func (c *Channel) waitIdle(ctx context.Context, cli *imapclient.Client, newMail <-chan struct{}) error {
	if err := cli.Noop().Wait(); err != nil {
		return fmt.Errorf("noop: %w", err)
	}
	select {
	case <-newMail:
		return nil
	default:
	}
	cmd, err := cli.Idle()
	if err != nil {
		return fmt.Errorf("idle: %w", err)
	}
	t := time.NewTimer(min(c.idleRestart, time.Duration(c.cfg.PollIntervalS)*time.Second))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-newMail:
	case <-t.C:
	}
	if err := cmd.Close(); err != nil {
		return fmt.Errorf("idle: %w", err)
	}
	if err := cmd.Wait(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("idle: %w", err)
	}
	return ctx.Err()
}

// processUnseen delivers every unseen mail from an admitted sender, oldest
// first, then marks it seen (or moves it). Mail from anyone else, the
// bot's own and automatic mail are left as they are.
func (c *Channel) processUnseen(ctx context.Context, cli *imapclient.Client, in channels.Inbox, skipped map[imap.UID]bool) error {
	res, err := cli.UIDSearch(&imap.SearchCriteria{NotFlag: []imap.Flag{imap.FlagSeen}}, nil).Wait()
	if err != nil {
		return fmt.Errorf("search: %w", err)
	}
	uids := res.AllUIDs()
	slices.Sort(uids)
	for _, uid := range uids {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if skipped[uid] {
			continue
		}
		body := &imap.FetchItemBodySection{Peek: true}
		msgs, err := cli.Fetch(imap.UIDSetNum(uid), &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{body}}).Collect()
		if err != nil {
			return fmt.Errorf("fetch %d: %w", uid, err)
		}
		if len(msgs) == 0 {
			continue
		}
		raw := msgs[0].FindBodySection(body)
		m, ok := c.toInbound(in, uid, raw)
		if !ok {
			skipped[uid] = true
			continue
		}
		if err := channels.DeliverRetrying(ctx, in, m, c.log, c.backoffMin, c.backoffMax); err != nil {
			if !errors.Is(err, channels.ErrDenied) {
				// Not taken: it stays unread, and the session ends so
				// that the channel backs off and reads it again first.
				return fmt.Errorf("mail %d: %w", uid, err)
			}
			skipped[uid] = true // denied: leave it unread for the owner
			continue
		}
		if err := c.finish(cli, uid); err != nil {
			return err
		}
	}
	return nil
}

// finish marks a delivered mail seen, or moves it.
func (c *Channel) finish(cli *imapclient.Client, uid imap.UID) error {
	set := imap.UIDSetNum(uid)
	if c.cfg.MoveTo != "" {
		if _, err := cli.Move(set, c.cfg.MoveTo).Wait(); err != nil {
			return fmt.Errorf("move to %s: %w", c.cfg.MoveTo, err)
		}
		return nil
	}
	if !c.cfg.markSeen() {
		return nil
	}
	return cli.Store(set, &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagSeen}}, nil).Close()
}

// toInbound turns a fetched mail into an Inbound, or reports false for
// mail the bot must not answer.
func (c *Channel) toInbound(in channels.Inbox, uid imap.UID, raw []byte) (bus.Inbound, bool) {
	a := c.cfg.Attachments
	p, err := parse(raw, a.Enabled, a.MaxBytes, a.MaxCount)
	if err != nil {
		c.log.Warn("email: malformed mail skipped", "uid", uid, "err", err)
		return bus.Inbound{}, false
	}
	switch {
	case strings.EqualFold(p.From, c.cfg.from()):
		return bus.Inbound{}, false // our own
	case p.Automatic:
		c.log.Debug("email: automatic mail not answered", "uid", uid, "from", p.From)
		return bus.Inbound{}, false
	case !channels.Admits(in, c.Name(), p.From):
		// Not even read: no pairing codes by mail, no marking as read.
		c.log.Info("email: mail from a sender not on allowFrom left unread", "uid", uid, "from", p.From)
		return bus.Inbound{}, false
	}
	text := p.Text
	if r := []rune(text); len(r) > c.cfg.MaxBodyChars {
		text = string(r[:c.cfg.MaxBodyChars]) + "\n[… mail cut at maxBodyChars]"
	}
	root := p.MessageID
	if len(p.References) > 0 {
		root = p.References[0]
	} else if p.InReplyTo != "" {
		root = p.InReplyTo
	}
	id := p.MessageID
	if id == "" {
		id = fmt.Sprintf("uid-%d", uid)
	}
	m := bus.Inbound{
		Channel:    c.Name(),
		SenderID:   p.From,
		ChatID:     p.From,
		MessageID:  id,
		SessionKey: bus.SessionKeyOf(c.Name(), p.From, root),
		Content:    untrusted.Wrap("email from "+p.From, "Subject: "+p.Subject+"\n\n"+text),
		Metadata: bus.Metadata{
			"subject": p.Subject, "message_id": p.MessageID,
			"references": strings.Join(append(slices.Clone(p.References), p.MessageID), " "),
		},
		ReceivedAt: time.Now(),
	}
	for i, f := range p.Files {
		if f.TooBig || c.mediaDir == "" {
			m.Content += fmt.Sprintf("\n[attachment %s: not downloaded (over %s)]", f.Name, media.Size(c.cfg.Attachments.MaxBytes))
			continue
		}
		file, err := media.Save(c.mediaDir, fmt.Sprintf("%d_%d%s", uid, i, media.Ext(f.Name, "", f.MIMEType)), f.Data)
		if err != nil {
			c.log.Warn("email: saving an attachment failed", "err", err)
			continue
		}
		m.Media = append(m.Media, bus.Media{Path: file, MIMEType: f.MIMEType, Name: f.Name, Size: int64(len(f.Data))})
	}
	return m, true
}
