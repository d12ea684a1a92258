// Package emailtest runs a real mail system inside a test: an IMAP server
// (go-imap's imapserver over its in-memory backend, with IDLE and MOVE)
// holding the bot's mailbox, and an SMTP server (go-smtp) that delivers
// mail for the bot into that mailbox and keeps everything else in an
// outbox the test reads. Both offer STARTTLS with a certificate made for
// the test (Roots trusts it) and refuse passwords before TLS unless
// Insecure is set.
//
// Concurrency: the IMAP and SMTP servers serve the code under test on
// goroutines of their own until t.Cleanup closes them. Outbox may be called
// from any goroutine; Send, Deliver, Seen, Count and Unseen fail through the
// t they are given and belong to the goroutine running the test.
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
	"net/mail"
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

// The bot's account.
const (
	BotAddress  = "bot@example.test"
	BotPassword = "bot-mail-password"
)

// Server is the mail system.
type Server struct {
	Host               string // 127.0.0.1
	IMAPPort, SMTPPort int
	// Roots trusts the servers' certificate.
	Roots *x509.CertPool

	user *imapmemserver.User
	tls  *tls.Config // the client side of STARTTLS (nil: insecure servers)

	mu     sync.Mutex
	outbox []Mail
	auths  int
}

// Mail is one message the SMTP server took for someone other than the bot.
type Mail struct {
	From, To string
	Header   mail.Header
	Body     string
	Raw      []byte
}

// Options shape the servers.
type Options struct {
	// Insecure lets clients log in without TLS (and offers no STARTTLS).
	Insecure bool
	// NoIdle leaves IDLE out of the IMAP capabilities (a polling server).
	NoIdle bool
}

// New starts both servers; they stop when the test ends.
func New(t testing.TB, o Options) *Server {
	t.Helper()
	cert, roots := selfSigned(t)
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if o.Insecure {
		tlsCfg = nil
	}
	s := &Server{Host: "127.0.0.1", Roots: roots, user: imapmemserver.NewUser(BotAddress, BotPassword)}
	if tlsCfg != nil {
		s.tls = &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}
	}
	if err := s.user.Create("INBOX", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.user.Create("Processed", nil); err != nil {
		t.Fatal(err)
	}
	mem := imapmemserver.New()
	mem.AddUser(s.user)
	caps := imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapMove: {}, imap.CapUIDPlus: {}}
	if !o.NoIdle {
		caps[imap.CapIdle] = struct{}{}
	}
	imapSrv := imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return mem.NewSession(), nil, nil
		},
		Caps: caps, TLSConfig: tlsCfg, InsecureAuth: o.Insecure, Logger: discard{},
	})
	iln := listen(t)
	go imapSrv.Serve(iln)
	t.Cleanup(func() { imapSrv.Close() })
	s.IMAPPort = iln.Addr().(*net.TCPAddr).Port

	smtpSrv := smtp.NewServer(backend{s})
	smtpSrv.Domain, smtpSrv.TLSConfig, smtpSrv.AllowInsecureAuth = "example.test", tlsCfg, o.Insecure
	smtpSrv.ReadTimeout, smtpSrv.WriteTimeout = 30*time.Second, 30*time.Second
	sln := listen(t)
	go smtpSrv.Serve(sln)
	t.Cleanup(func() { smtpSrv.Close() })
	s.SMTPPort = sln.Addr().(*net.TCPAddr).Port
	return s
}

func listen(t testing.TB) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// Send delivers a mail from a user to the bot through SMTP, as the user's
// provider would, and returns its Message-ID (without <>). extra are more
// header lines ("In-Reply-To: <x>").
func (s *Server) Send(t testing.TB, from, subject, body string, extra ...string) string {
	t.Helper()
	addr := from
	if a, err := mail.ParseAddress(from); err == nil {
		addr = a.Address
	}
	id := fmt.Sprintf("%d.%s@mail.example.test", time.Now().UnixNano(), strings.SplitN(addr, "@", 2)[0])
	var b bytes.Buffer
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nMessage-ID: <%s>\r\nDate: %s\r\n", from, BotAddress, subject, id, time.Now().Format(time.RFC1123Z))
	hasType := false
	for _, h := range extra {
		hasType = hasType || strings.HasPrefix(strings.ToLower(h), "content-type:")
		b.WriteString(h + "\r\n")
	}
	if !hasType {
		b.WriteString("Content-Type: text/plain; charset=utf-8\r\n")
	}
	b.WriteString("\r\n" + strings.ReplaceAll(body, "\n", "\r\n") + "\r\n")
	s.Deliver(t, addr, b.Bytes())
	return id
}

// Seen reports whether the bot's mail with that Message-ID is flagged
// \Seen (read over IMAP, as a mail client would see it).
func (s *Server) Seen(t testing.TB, messageID string) bool {
	t.Helper()
	addr := net.JoinHostPort(s.Host, fmt.Sprint(s.IMAPPort))
	var c *imapclient.Client
	var err error
	if s.tls != nil {
		c, err = imapclient.DialStartTLS(addr, &imapclient.Options{TLSConfig: s.tls})
	} else {
		c, err = imapclient.DialInsecure(addr, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(BotAddress, BotPassword).Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Select("INBOX", &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
		t.Fatal(err)
	}
	res, err := c.Search(&imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "Message-ID", Value: messageID}}, Flag: []imap.Flag{imap.FlagSeen}}, nil).Wait()
	if err != nil {
		t.Fatal(err)
	}
	return len(res.AllSeqNums()) > 0
}

// Deliver hands a raw message for the bot to the SMTP server.
func (s *Server) Deliver(t testing.TB, from string, raw []byte) {
	t.Helper()
	c, err := smtp.Dial(net.JoinHostPort(s.Host, fmt.Sprint(s.SMTPPort)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SendMail(from, []string{BotAddress}, bytes.NewReader(raw)); err != nil {
		t.Fatal(err)
	}
}

// Outbox returns the mail the bot sent, in order.
func (s *Server) Outbox() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Mail(nil), s.outbox...)
}

// Count returns how many messages folder holds.
func (s *Server) Count(t testing.TB, folder string) int {
	t.Helper()
	st, err := s.user.Status(folder, &imap.StatusOptions{NumMessages: true})
	if err != nil {
		t.Fatal(err)
	}
	return int(*st.NumMessages)
}

// Unseen returns how many messages in folder are not \Seen.
func (s *Server) Unseen(t testing.TB, folder string) int {
	t.Helper()
	st, err := s.user.Status(folder, &imap.StatusOptions{NumUnseen: true})
	if err != nil {
		t.Fatal(err)
	}
	return int(*st.NumUnseen)
}

// backend delivers mail for the bot into its INBOX, the rest to the outbox.
type backend struct{ s *Server }

func (b backend) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{s: b.s}, nil }

type session struct {
	s    *Server
	from string
	to   []string
}

func (x *session) AuthMechanisms() []string { return []string{sasl.Plain} }
func (x *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != BotAddress || pass != BotPassword {
			return errors.New("invalid credentials")
		}
		x.s.mu.Lock()
		x.s.auths++
		x.s.mu.Unlock()
		return nil
	}), nil
}
func (x *session) Mail(from string, _ *smtp.MailOptions) error { x.from = from; return nil }
func (x *session) Rcpt(to string, _ *smtp.RcptOptions) error   { x.to = append(x.to, to); return nil }
func (x *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	for _, to := range x.to {
		if strings.EqualFold(to, BotAddress) {
			if _, err := x.s.user.Append("INBOX", literal{bytes.NewReader(raw), int64(len(raw))}, &imap.AppendOptions{Time: time.Now()}); err != nil {
				return err
			}
			continue
		}
		m := Mail{From: x.from, To: to, Raw: raw}
		if msg, err := mail.ReadMessage(bytes.NewReader(raw)); err == nil {
			body, _ := io.ReadAll(msg.Body)
			m.Header, m.Body = msg.Header, strings.ReplaceAll(string(body), "\r\n", "\n")
		}
		x.s.mu.Lock()
		x.s.outbox = append(x.s.outbox, m)
		x.s.mu.Unlock()
	}
	return nil
}
func (x *session) Reset()        { x.from, x.to = "", nil }
func (x *session) Logout() error { return nil }

type literal struct {
	*bytes.Reader
	n int64
}

func (l literal) Size() int64 { return l.n }

type discard struct{}

func (discard) Printf(string, ...any) {}

// selfSigned makes a certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "emailtest"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
