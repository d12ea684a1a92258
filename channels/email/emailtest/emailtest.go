// Package emailtest runs a real mail server pair in-process for tests: an
// IMAP server (go-imap v2's imapserver over the in-memory imapmemserver
// backend, IDLE included) and an SMTP server (go-smtp) whose backend
// delivers into the same in-memory mailboxes. A reply the adapter sends by
// SMTP to a local account can so be read back over IMAP, and a test "user"
// writes to the bot by submitting mail through SMTP like any mail client.
//
// Both servers listen on loopback ports chosen by the kernel, speak plain
// text, STARTTLS or implicit TLS (a self-signed certificate made per server;
// ClientTLS trusts it), and stop when the test ends. Everything the SMTP
// server accepted is recorded (Received); Find looks a message up by its
// Message-ID over IMAP; Drop cuts every open connection.
//
// Usage:
//
//	srv := emailtest.New(t, emailtest.Options{})
//	srv.AddAccount("alice@example.test", "pw")
//	srv.Submit(emailtest.Mail{From: "alice@example.test", To: emailtest.BotAddress, Text: "hi"})
package emailtest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// The bot's account, created by New.
const (
	BotAddress  = "bot@example.test"
	BotPassword = "bot-app-password"
)

// Security is how a server protects its connections.
type Security int

const (
	// Plain is no TLS at all; the servers accept passwords in clear text
	// (what an adapter must only do with allowInsecure).
	Plain Security = iota
	// StartTLS upgrades a plain connection; passwords only after it.
	StartTLS
	// ImplicitTLS is TLS from the first byte (ports 993 and 465).
	ImplicitTLS
)

// Options configure New.
type Options struct {
	IMAP, SMTP Security
	// NoIdle hides the IDLE capability, so a client must poll. Only with
	// IMAP Plain (the capability lines are rewritten on the wire).
	NoIdle bool
	// Mailboxes are created for the bot besides INBOX ("Archive", ...).
	Mailboxes []string
}

// Server is the IMAP + SMTP pair.
type Server struct {
	t    testing.TB
	opts Options
	mem  *imapmemserver.Server
	imap *imapserver.Server
	smtp *smtp.Server
	tls  *tls.Config // server side
	ca   *x509.CertPool

	imapLn, smtpLn *trackListener

	mu       sync.Mutex
	accounts map[string]*account
	received []Received
	auths    []AuthAttempt

	// obsMu guards observers and serialises their use; never held with mu.
	obsMu     sync.Mutex
	observers map[string]*imapclient.Client
}

type account struct {
	address, password string
	user              *imapmemserver.User
}

// Received is one message the SMTP server accepted.
type Received struct {
	// From and To are the envelope (MAIL FROM, RCPT TO), lowercased.
	From string
	To   []string
	// Raw is the message as submitted.
	Raw []byte
	// AuthUser is who authenticated ("" without AUTH); TLS tells whether
	// the connection was encrypted.
	AuthUser string
	TLS      bool
	At       time.Time
}

// AuthAttempt is one SMTP AUTH or IMAP LOGIN the servers saw.
type AuthAttempt struct {
	Protocol string // "smtp" or "imap"
	User     string
	TLS      bool
	OK       bool
}

// New starts both servers with the bot's account (INBOX plus
// opts.Mailboxes). They stop when the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.NoIdle && opts.IMAP != Plain {
		t.Fatal("emailtest: NoIdle needs IMAP Plain")
	}
	s := &Server{t: t, opts: opts, mem: imapmemserver.New(), accounts: map[string]*account{}, observers: map[string]*imapclient.Client{}}
	s.tls, s.ca = selfSigned(t)
	s.AddAccount(BotAddress, BotPassword, opts.Mailboxes...)
	s.startIMAP()
	s.startSMTP()
	t.Cleanup(s.close)
	return s
}

// ClientTLS is a client TLS config that trusts the servers' certificate.
func (s *Server) ClientTLS() *tls.Config {
	return &tls.Config{RootCAs: s.ca, MinVersion: tls.VersionTLS12}
}

// IMAPAddr and SMTPAddr are the servers' host:port.
func (s *Server) IMAPAddr() string { return s.imapLn.Addr().String() }
func (s *Server) SMTPAddr() string { return s.smtpLn.Addr().String() }

// IMAPPort and SMTPPort are the servers' ports (the host is 127.0.0.1).
func (s *Server) IMAPPort() int { return s.imapLn.Addr().(*net.TCPAddr).Port }
func (s *Server) SMTPPort() int { return s.smtpLn.Addr().(*net.TCPAddr).Port }

// AddAccount creates a mailbox owner (login = address) with an INBOX and
// the named extra mailboxes. Mail the SMTP server accepts for address is
// delivered to that INBOX.
func (s *Server) AddAccount(address, password string, mailboxes ...string) {
	s.t.Helper()
	u := imapmemserver.NewUser(address, password)
	for _, m := range append([]string{"INBOX"}, mailboxes...) {
		if err := u.Create(m, nil); err != nil {
			s.t.Fatalf("emailtest: create %s for %s: %v", m, address, err)
		}
	}
	s.mem.AddUser(u)
	s.mu.Lock()
	s.accounts[strings.ToLower(address)] = &account{address: address, password: password, user: u}
	s.mu.Unlock()
}

// Append stores raw in an account's mailbox directly (as a server-side
// delivery would), unseen.
func (s *Server) Append(address, mailbox string, raw []byte) error {
	a := s.account(address)
	if a == nil {
		return fmt.Errorf("emailtest: no account %s", address)
	}
	_, err := a.user.Append(mailbox, bytes.NewReader(raw), &imap.AppendOptions{Time: time.Now()})
	return err
}

func (s *Server) account(address string) *account {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accounts[strings.ToLower(address)]
}

// Submit sends m through the SMTP server (unauthenticated, as a mail
// exchanger would receive it) to m.To and returns its Message-ID (without
// angle brackets).
func (s *Server) Submit(m Mail) (string, error) {
	raw, id, err := m.Bytes()
	if err != nil {
		return "", err
	}
	return id, s.SubmitRaw(m.From, []string{m.To}, raw)
}

// SubmitRaw sends raw through the SMTP server as is.
func (s *Server) SubmitRaw(from string, to []string, raw []byte) error {
	var c *smtp.Client
	var err error
	switch s.opts.SMTP {
	case ImplicitTLS:
		c, err = smtp.DialTLS(s.SMTPAddr(), s.ClientTLS())
	case StartTLS:
		c, err = smtp.DialStartTLS(s.SMTPAddr(), s.ClientTLS())
	default:
		c, err = smtp.Dial(s.SMTPAddr())
	}
	if err != nil {
		return fmt.Errorf("emailtest: dial smtp: %w", err)
	}
	defer c.Close()
	if err := c.SendMail(from, to, bytes.NewReader(raw)); err != nil {
		return fmt.Errorf("emailtest: submit: %w", err)
	}
	return c.Quit()
}

// Received returns every message the SMTP server accepted, in order.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

// AuthAttempts returns every SMTP AUTH and IMAP LOGIN seen, in order.
func (s *Server) AuthAttempts() []AuthAttempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]AuthAttempt(nil), s.auths...)
}

func (s *Server) recordAuth(a AuthAttempt) {
	s.mu.Lock()
	s.auths = append(s.auths, a)
	s.mu.Unlock()
}

// Drop closes every open IMAP and SMTP connection (the servers keep
// listening), like a server restart or a network cut.
func (s *Server) Drop() {
	s.imapLn.closeConns()
	s.smtpLn.closeConns()
}

// Found is a message Find located.
type Found struct {
	UID   imap.UID
	Flags []imap.Flag
}

// Seen reports whether the message has the \Seen flag.
func (f Found) Seen() bool {
	for _, fl := range f.Flags {
		if fl == imap.FlagSeen {
			return true
		}
	}
	return false
}

// Find looks a message up by Message-ID (without angle brackets) in an
// account's mailbox, over IMAP.
func (s *Server) Find(address, mailbox, messageID string) (Found, bool, error) {
	var f Found
	var ok bool
	err := s.observe(address, func(c *imapclient.Client) error {
		if _, err := c.Select(mailbox, &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
			return err
		}
		crit := &imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "Message-Id", Value: messageID}}}
		data, err := c.UIDSearch(crit, nil).Wait()
		if err != nil {
			return err
		}
		uids := data.AllUIDs()
		if len(uids) == 0 {
			return nil
		}
		msgs, err := c.Fetch(imap.UIDSetNum(uids[0]), &imap.FetchOptions{UID: true, Flags: true}).Collect()
		if err != nil {
			return err
		}
		if len(msgs) == 1 {
			f, ok = Found{UID: msgs[0].UID, Flags: msgs[0].Flags}, true
		}
		return nil
	})
	return f, ok, err
}

// Messages returns the raw messages in an account's mailbox, in order,
// read over IMAP.
func (s *Server) Messages(address, mailbox string) ([][]byte, error) {
	var out [][]byte
	err := s.observe(address, func(c *imapclient.Client) error {
		sel, err := c.Select(mailbox, &imap.SelectOptions{ReadOnly: true}).Wait()
		if err != nil {
			return err
		}
		out = nil
		if sel.NumMessages == 0 {
			return nil
		}
		body := &imap.FetchItemBodySection{Peek: true}
		msgs, err := c.Fetch(imap.SeqSetNum(rangeTo(sel.NumMessages)...), &imap.FetchOptions{BodySection: []*imap.FetchItemBodySection{body}}).Collect()
		if err != nil {
			return err
		}
		for _, m := range msgs {
			out = append(out, m.FindBodySection(body))
		}
		return nil
	})
	return out, err
}

func rangeTo(n uint32) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(i + 1)
	}
	return out
}

// observe runs f on a logged-in IMAP connection of the account's own,
// reconnecting once when the connection was dropped.
func (s *Server) observe(address string, f func(c *imapclient.Client) error) error {
	a := s.account(address)
	if a == nil {
		return fmt.Errorf("emailtest: no account %s", address)
	}
	s.obsMu.Lock()
	defer s.obsMu.Unlock()
	for attempt := 0; ; attempt++ {
		c := s.observers[a.address]
		if c == nil {
			var err error
			if c, err = s.dialIMAP(a); err != nil {
				return err
			}
			s.observers[a.address] = c
		}
		err := f(c)
		if err == nil || attempt > 0 {
			return err
		}
		select {
		case <-c.Closed():
		default:
			if !isNetErr(err) {
				return err
			}
		}
		_ = c.Close()
		delete(s.observers, a.address)
	}
}

func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)
}

func (s *Server) dialIMAP(a *account) (*imapclient.Client, error) {
	opts := &imapclient.Options{TLSConfig: s.ClientTLS()}
	var c *imapclient.Client
	var err error
	switch s.opts.IMAP {
	case ImplicitTLS:
		c, err = imapclient.DialTLS(s.IMAPAddr(), opts)
	case StartTLS:
		c, err = imapclient.DialStartTLS(s.IMAPAddr(), opts)
	default:
		c, err = imapclient.DialInsecure(s.IMAPAddr(), opts)
	}
	if err != nil {
		return nil, fmt.Errorf("emailtest: dial imap: %w", err)
	}
	if err := c.Login(a.address, a.password).Wait(); err != nil {
		c.Close()
		return nil, fmt.Errorf("emailtest: login: %w", err)
	}
	return c, nil
}

func (s *Server) startIMAP() {
	var ln net.Listener = s.listen()
	s.imapLn = ln.(*trackListener)
	if s.opts.NoIdle {
		ln = &noIdleListener{ln}
	}
	if s.opts.IMAP == ImplicitTLS {
		ln = tls.NewListener(ln, s.tls)
	}
	opts := &imapserver.Options{
		NewSession: func(c *imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return &loginRecorder{SessionIMAP4rev2: s.mem.NewSession().(imapserver.SessionIMAP4rev2), srv: s, conn: c}, nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapMove: {}, imap.CapUIDPlus: {}},
		Logger:       discardLogger{},
		InsecureAuth: s.opts.IMAP == Plain,
	}
	if s.opts.IMAP == StartTLS {
		opts.TLSConfig = s.tls
	}
	s.imap = imapserver.New(opts)
	go func() { _ = s.imap.Serve(ln) }()
}

// loginRecorder notes every LOGIN with whether it came over TLS, and
// pushes updates during IDLE by checking every few milliseconds: the
// in-memory backend's own IDLE misses a change queued in the instant
// before IDLE began, where a real server reports it.
type loginRecorder struct {
	imapserver.SessionIMAP4rev2
	srv  *Server
	conn *imapserver.Conn
}

func (l *loginRecorder) Idle(w *imapserver.UpdateWriter, stop <-chan struct{}) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		if err := l.SessionIMAP4rev2.Poll(w, true); err != nil {
			return err
		}
		select {
		case <-stop:
			return nil
		case <-t.C:
		}
	}
}

func (l *loginRecorder) Login(username, password string) error {
	err := l.SessionIMAP4rev2.Login(username, password)
	_, isTLS := l.conn.NetConn().(*tls.Conn)
	l.srv.recordAuth(AuthAttempt{Protocol: "imap", User: username, TLS: isTLS, OK: err == nil})
	return err
}

func (s *Server) startSMTP() {
	var ln net.Listener = s.listen()
	s.smtpLn = ln.(*trackListener)
	if s.opts.SMTP == ImplicitTLS {
		ln = tls.NewListener(ln, s.tls)
	}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &smtpSession{srv: s, conn: c}, nil
	}))
	srv.Domain = "mx.example.test"
	srv.AllowInsecureAuth = s.opts.SMTP == Plain
	srv.MaxMessageBytes = 32 << 20
	srv.ReadTimeout, srv.WriteTimeout = time.Minute, time.Minute
	srv.ErrorLog = discardLogger{}
	if s.opts.SMTP == StartTLS {
		srv.TLSConfig = s.tls
	}
	s.smtp = srv
	go func() { _ = srv.Serve(ln) }()
}

func (s *Server) listen() *trackListener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.t.Fatalf("emailtest: listen: %v", err)
	}
	return &trackListener{Listener: ln, conns: map[net.Conn]struct{}{}}
}

func (s *Server) close() {
	s.obsMu.Lock()
	for _, c := range s.observers {
		_ = c.Close()
	}
	s.observers = map[string]*imapclient.Client{}
	s.obsMu.Unlock()
	_ = s.imap.Close()
	_ = s.smtp.Close()
	s.Drop()
}

// smtpSession receives one SMTP transaction at a time.
type smtpSession struct {
	srv      *Server
	conn     *smtp.Conn
	authUser string
	from     string
	to       []string
}

func (ss *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (ss *smtpSession) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		a := ss.srv.account(username)
		ok := a != nil && a.password == password && (identity == "" || identity == username)
		_, isTLS := ss.conn.TLSConnectionState()
		ss.srv.recordAuth(AuthAttempt{Protocol: "smtp", User: username, TLS: isTLS, OK: ok})
		if !ok {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "authentication failed"}
		}
		ss.authUser = username
		return nil
	}), nil
}

func (ss *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	ss.from = strings.ToLower(from)
	return nil
}

func (ss *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.to = append(ss.to, strings.ToLower(to))
	return nil
}

func (ss *smtpSession) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	_, isTLS := ss.conn.TLSConnectionState()
	rec := Received{From: ss.from, To: append([]string(nil), ss.to...), Raw: raw, AuthUser: ss.authUser, TLS: isTLS, At: time.Now()}
	ss.srv.mu.Lock()
	ss.srv.received = append(ss.srv.received, rec)
	ss.srv.mu.Unlock()
	for _, rcpt := range rec.To {
		if a := ss.srv.account(rcpt); a != nil {
			if _, err := a.user.Append("INBOX", bytes.NewReader(raw), &imap.AppendOptions{Time: rec.At}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (ss *smtpSession) Reset() { ss.from, ss.to = "", nil }

func (ss *smtpSession) Logout() error { return nil }

// trackListener remembers accepted connections so Drop can cut them.
type trackListener struct {
	net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func (l *trackListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.conns[c] = struct{}{}
	l.mu.Unlock()
	return c, nil
}

func (l *trackListener) closeConns() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		_ = c.Close()
	}
	clear(l.conns)
}

// noIdleListener hides IDLE from the capability lists the server writes.
type noIdleListener struct{ net.Listener }

func (l *noIdleListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return noIdleConn{c}, nil
}

type noIdleConn struct{ net.Conn }

func (c noIdleConn) Write(b []byte) (int, error) {
	if !bytes.Contains(b, []byte("CAPABILITY")) {
		return c.Conn.Write(b)
	}
	if _, err := c.Conn.Write(bytes.ReplaceAll(b, []byte(" IDLE"), nil)); err != nil {
		return 0, err
	}
	return len(b), nil
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}
func (discardLogger) Println(...any)        {}

// selfSigned makes a certificate for 127.0.0.1 and localhost.
func selfSigned(t testing.TB) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "emailtest"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}}, MinVersion: tls.VersionTLS12}, pool
}
