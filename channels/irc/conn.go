package irc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ergochat/irc-go/ircmsg"
	"github.com/ergochat/irc-go/ircreader"
	"github.com/ergochat/irc-go/ircutils"

	"github.com/nanobot-go/nanobot/channels"
)

// maxLine is the IRC line limit, CR LF included (tags have their own
// budget on top).
const maxLine = 512

// writeTimeout bounds one line's write: a server that takes no data for
// that long is as good as gone.
const writeTimeout = 30 * time.Second

// Errors no retry can fix; Run returns them wrapped in a channels.FatalError.
var (
	ErrSASLRejected  = errors.New("irc: the server rejected the SASL PLAIN login; check channels.irc.sasl.user and channels.irc.sasl.password")
	ErrNoSASL        = errors.New("irc: channels.irc.sasl is set but the server offers no SASL; remove it (or use nickservPassword)")
	ErrPassword      = errors.New("irc: the server rejected the server password (464); check channels.irc.password")
	ErrBanned        = errors.New("irc: the server refused the connection: banned (465)")
	ErrNickRejected  = errors.New("irc: the server rejected the nick as erroneous (432); choose another channels.irc.nick")
	errNotConnected  = errors.New("irc: not connected to the server")
	errRegisterSlow  = errors.New("irc: the server did not finish registration in time")
	errServerStopped = errors.New("irc: the server stopped answering pings")
)

// conn is one registered (or registering) connection. Writes are safe for
// concurrent use; reads belong to the session's goroutine.
type conn struct {
	nc net.Conn
	r  ircreader.Reader

	wmu sync.Mutex // one line at a time on the wire

	mu   sync.Mutex
	nick string // the nick the server knows us by
	user string // our user and host as the server relays them, once seen
	host string
	caps map[string]bool // capabilities the server acknowledged

	closeOnce sync.Once
}

func newConn(nc net.Conn) *conn {
	cn := &conn{nc: nc, caps: map[string]bool{}}
	// Lines carry up to 8191 bytes of tags before the 512-byte body.
	cn.r.Initialize(nc, 1024, ircmsg.MaxlenTags+maxLine)
	return cn
}

// dial opens the TCP (and TLS) connection.
func (c *Channel) dial(ctx context.Context) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, c.dialTimeout)
	defer cancel()
	d := net.Dialer{KeepAlive: time.Minute}
	nc, err := d.DialContext(ctx, "tcp", c.addr())
	if err != nil {
		return nil, err
	}
	if c.tls == nil {
		return nc, nil
	}
	tc := tls.Client(nc, c.tls)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("tls handshake: %w", err)
	}
	return tc, nil
}

func (cn *conn) currentNick() string {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.nick
}

func (cn *conn) setNick(n string) {
	cn.mu.Lock()
	cn.nick = n
	cn.mu.Unlock()
}

// mask returns our user and host as last seen relayed by the server.
func (cn *conn) mask() (user, host string) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.user, cn.host
}

func (cn *conn) learnMask(user, host string) {
	cn.mu.Lock()
	cn.user, cn.host = user, host
	cn.mu.Unlock()
}

// send writes one message.
func (cn *conn) send(command string, params ...string) error {
	m := ircmsg.MakeMessage(nil, "", command, params...)
	return cn.write(m)
}

func (cn *conn) write(m ircmsg.Message) error {
	b, err := m.LineBytesStrict(true, maxLine)
	if err != nil {
		return fmt.Errorf("irc: encode %s: %w", m.Command, err)
	}
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	if err := cn.nc.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return err
	}
	_, err = cn.nc.Write(b)
	return err
}

// read returns the next line. A line the parser rejects comes back as an
// error wrapping errMalformed, and reading can go on.
func (cn *conn) read() (ircmsg.Message, error) {
	line, err := cn.r.ReadLine()
	if err != nil {
		return ircmsg.Message{}, err
	}
	m, err := ircmsg.ParseLineStrict(string(line), false, 0)
	if err != nil {
		return m, fmt.Errorf("%w: %w", errMalformed, err)
	}
	return m, nil
}

var errMalformed = errors.New("malformed line")

// close says goodbye (best effort, not waiting for a slow server) and
// closes the connection.
func (cn *conn) close(reason string) {
	cn.closeOnce.Do(func() {
		if reason != "" {
			_ = cn.nc.SetWriteDeadline(time.Now().Add(time.Second))
			cn.wmu.Lock()
			_, _ = cn.nc.Write([]byte("QUIT :" + reason + "\r\n"))
			cn.wmu.Unlock()
		}
		cn.nc.Close()
	})
}

// session is one connection's life for the channels.Loop.
func (c *Channel) session(ctx context.Context, up func()) error {
	nc, err := c.dial(ctx)
	if err != nil {
		return fmt.Errorf("irc: connect to %s: %w", c.addr(), err)
	}
	cn := newConn(nc)
	stop := context.AfterFunc(ctx, func() { cn.close("bye") })
	defer stop()
	defer cn.close("")
	if err := c.register(ctx, cn); err != nil {
		return err
	}
	c.setCurrent(cn)
	defer c.setCurrent(nil)
	up()
	c.log.Info("irc: connected", "server", c.addr(), "nick", cn.currentNick())

	// Joining and identifying wait for flood tokens; they run beside the
	// reader so that pings are answered meanwhile.
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { c.afterWelcome(sctx, cn) })
	defer func() {
		cancel()
		wg.Wait()
	}()
	return c.serve(ctx, cn, &wg, sctx)
}

// register runs the connection registration: capabilities, SASL, server
// password, nick (with alternatives while it is taken) and user, until the
// server's welcome (001).
func (c *Channel) register(ctx context.Context, cn *conn) error {
	if err := cn.nc.SetDeadline(time.Now().Add(c.registerTimeout)); err != nil {
		return err
	}
	defer cn.nc.SetDeadline(time.Time{})
	wantSASL := c.cfg.SASL.User != ""
	attempt := 0
	cn.setNick(c.cfg.Nick)
	greeting := [][]string{{"CAP", "LS", "302"}}
	if c.cfg.Password != "" {
		greeting = append(greeting, []string{"PASS", c.cfg.Password})
	}
	greeting = append(greeting, []string{"NICK", c.cfg.Nick}, []string{"USER", c.cfg.User, "0", "*", c.cfg.Realname})
	for _, line := range greeting {
		if err := cn.send(line[0], line[1:]...); err != nil {
			return fmt.Errorf("irc: register: %w", err)
		}
	}
	offered := map[string]bool{}
	for {
		m, err := cn.read()
		switch {
		case errors.Is(err, errMalformed):
			c.log.Warn("irc: malformed line from the server skipped", "err", err)
			continue
		case errors.Is(err, os.ErrDeadlineExceeded):
			return errRegisterSlow
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("irc: register: %w", err)
		}
		var werr error
		switch m.Command {
		case "PING":
			werr = cn.send("PONG", m.Params...)
		case "CAP":
			if err := c.negotiate(cn, m.Params, offered); err != nil {
				return err
			}
		case "AUTHENTICATE":
			if len(m.Params) == 1 && m.Params[0] == "+" && wantSASL {
				for _, chunk := range ircutils.EncodeSASLResponse([]byte(saslBlob(c.cfg.SASL))) {
					if werr = cn.send("AUTHENTICATE", chunk); werr != nil {
						break
					}
				}
			}
		case "900": // RPL_LOGGEDIN
			c.log.Info("irc: logged in with SASL", "account", c.cfg.SASL.User)
		case "903": // RPL_SASLSUCCESS
			werr = cn.send("CAP", "END")
		case "902", "904", "905", "906": // nick locked, failed, too long, aborted
			return channels.Fatal(fmt.Errorf("%w (%s %s)", ErrSASLRejected, m.Command, c.redact.String(last(m.Params))))
		case "433", "436": // nick in use, nick collision
			attempt++
			alt := altNick(c.cfg.Nick, attempt)
			c.log.Warn("irc: nick in use; trying another", "nick", cn.currentNick(), "next", alt)
			cn.setNick(alt)
			werr = cn.send("NICK", alt)
		case "432":
			return channels.Fatal(fmt.Errorf("%w (%q)", ErrNickRejected, cn.currentNick()))
		case "464":
			return channels.Fatal(ErrPassword)
		case "465":
			return channels.Fatal(fmt.Errorf("%w: %s", ErrBanned, c.redact.String(last(m.Params))))
		case "ERROR":
			return fmt.Errorf("irc: the server closed the connection while registering: %s", c.redact.String(last(m.Params)))
		case "001":
			if len(m.Params) > 0 {
				cn.setNick(m.Params[0])
			}
			return nil
		}
		if werr != nil {
			return fmt.Errorf("irc: register: %w", werr)
		}
	}
}

// negotiate answers one CAP line while registering: it gathers what the
// server offers (LS, possibly over several lines), requests SASL and the
// tags it uses, and ends the negotiation or starts SASL once the server
// acknowledges. A server that cannot do the SASL the config asks for is a
// fatal error.
func (c *Channel) negotiate(cn *conn, params []string, offered map[string]bool) error {
	if len(params) < 3 {
		return nil
	}
	wantSASL := c.cfg.SASL.User != ""
	sub, list := strings.ToUpper(params[1]), params[len(params)-1]
	more := len(params) > 3 && params[2] == "*"
	var err error
	switch sub {
	case "LS":
		for _, cp := range strings.Fields(list) {
			name, _, _ := strings.Cut(cp, "=")
			offered[name] = true
		}
		if more {
			return nil
		}
		var req []string
		if wantSASL {
			if !offered["sasl"] {
				return channels.Fatal(ErrNoSASL)
			}
			req = append(req, "sasl")
		}
		for _, cp := range []string{"account-tag", "message-tags"} {
			if offered[cp] {
				req = append(req, cp)
			}
		}
		if len(req) == 0 {
			err = cn.send("CAP", "END")
		} else {
			err = cn.send("CAP", "REQ", strings.Join(req, " "))
		}
	case "ACK":
		for _, cp := range strings.Fields(list) {
			cn.caps[strings.TrimPrefix(cp, "-")] = !strings.HasPrefix(cp, "-")
		}
		if wantSASL && cn.caps["sasl"] {
			err = cn.send("AUTHENTICATE", "PLAIN")
		} else {
			err = cn.send("CAP", "END")
		}
	case "NAK":
		if wantSASL {
			return channels.Fatal(ErrNoSASL)
		}
		err = cn.send("CAP", "END")
	}
	if err != nil {
		return fmt.Errorf("irc: register: %w", err)
	}
	return nil
}

// saslBlob is the SASL PLAIN response: authzid NUL authcid NUL password.
func saslBlob(s SASLConfig) string {
	if s.User == "" {
		return ""
	}
	return s.User + "\x00" + s.User + "\x00" + s.Password
}

// altNick is the attempt-th alternative to nick: nick_, nick__, nick2, …
// Nicks of at most 9 characters (RFC 1459's limit, still ngIRCd's default)
// are kept that short by cutting the base.
func altNick(nick string, attempt int) string {
	suffix := strings.Repeat("_", attempt)
	if attempt > 2 {
		suffix = strconv.Itoa(attempt - 1)
	}
	if len(nick) <= 9 && len(nick)+len(suffix) > 9 {
		nick = nick[:max(9-len(suffix), 1)]
	}
	return nick + suffix
}

func last(params []string) string {
	if len(params) == 0 {
		return ""
	}
	return params[len(params)-1]
}

// afterWelcome identifies to NickServ, joins the configured channels and,
// while the bot runs under another nick, asks for its own back now and
// then. Lines wait for flood tokens.
func (c *Channel) afterWelcome(ctx context.Context, cn *conn) {
	if c.cfg.NickservPassword != "" {
		if c.flood.take(ctx) != nil {
			return
		}
		if err := cn.send("PRIVMSG", "NickServ", "IDENTIFY "+c.cfg.Nick+" "+c.cfg.NickservPassword); err != nil {
			return
		}
	}
	c.joinAll(ctx, cn)
	channels.Every(ctx, c.regain, func() bool {
		if !strings.EqualFold(cn.currentNick(), c.cfg.Nick) && c.flood.tryTake() {
			_ = cn.send("NICK", c.cfg.Nick)
		}
		return true
	})
}

func (c *Channel) joinAll(ctx context.Context, cn *conn) {
	for _, ch := range c.cfg.Channels {
		if c.join(ctx, cn, ch) != nil {
			return
		}
	}
}

func (c *Channel) join(ctx context.Context, cn *conn, ch ChannelConfig) error {
	if err := c.flood.take(ctx); err != nil {
		return err
	}
	if ch.Key != "" {
		return cn.send("JOIN", ch.Name, ch.Key)
	}
	return cn.send("JOIN", ch.Name)
}

// serve reads until the connection breaks or ctx ends. When the line has
// been quiet for c.idle it pings the server, and gives up when the answer
// does not come within another c.idle.
func (c *Channel) serve(ctx context.Context, cn *conn, wg *sync.WaitGroup, sctx context.Context) error {
	pinged := false
	for {
		if err := cn.nc.SetReadDeadline(time.Now().Add(c.idle)); err != nil {
			return err
		}
		m, err := cn.read()
		switch {
		case errors.Is(err, errMalformed):
			c.log.Warn("irc: malformed line from the server skipped", "err", err)
			continue
		case errors.Is(err, os.ErrDeadlineExceeded) && !pinged:
			pinged = true
			if err := cn.send("PING", "nanobot"); err != nil {
				return fmt.Errorf("irc: ping: %w", err)
			}
			continue
		case errors.Is(err, os.ErrDeadlineExceeded):
			return errServerStopped
		case err != nil:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("irc: read: %w", err)
		}
		pinged = false
		me := cn.currentNick()
		from := m.Nick()
		switch m.Command {
		case "PING":
			if err := cn.send("PONG", m.Params...); err != nil {
				return fmt.Errorf("irc: pong: %w", err)
			}
		case "ERROR":
			return fmt.Errorf("irc: the server closed the connection: %s", c.redact.String(last(m.Params)))
		case "PRIVMSG":
			select {
			case c.events <- event{msg: m, nick: me, at: time.Now()}:
			case <-ctx.Done():
				return nil
			}
		case "NICK":
			if strings.EqualFold(from, me) && len(m.Params) > 0 {
				cn.setNick(m.Params[0])
				c.log.Info("irc: nick changed", "from", from, "to", m.Params[0])
			}
		case "JOIN":
			if strings.EqualFold(from, me) {
				if nuh, err := m.NUH(); err == nil {
					cn.learnMask(nuh.User, nuh.Host)
				}
				c.log.Info("irc: joined", "channel", first(m.Params))
			}
		case "KICK":
			if len(m.Params) > 1 && strings.EqualFold(m.Params[1], me) {
				c.log.Warn("irc: kicked from a channel; joining again", "channel", m.Params[0], "by", from, "reason", last(m.Params[2:]))
				for _, ch := range c.cfg.Channels {
					if strings.EqualFold(ch.Name, m.Params[0]) {
						wg.Go(func() { _ = c.join(sctx, cn, ch) })
					}
				}
			}
		case "401", "403", "404", "471", "473", "474", "475", "477":
			// No such nick/channel, cannot send, cannot join: the reply
			// comes after Send returned, so it is only logged.
			c.log.Warn("irc: the server refused a message or join", "code", m.Command, "target", param(m.Params, 1), "reason", last(m.Params))
		}
	}
}

func first(p []string) string { return param(p, 0) }

func param(p []string, i int) string {
	if i < len(p) {
		return p[i]
	}
	return ""
}
