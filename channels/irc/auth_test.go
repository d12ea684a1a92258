package irc

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/irc/irctest"
)

// saslServer is a minimal IRC server for SASL PLAIN, which ngIRCd does not
// have (SASL needs services on every real network): it offers sasl in CAP
// LS, checks the AUTHENTICATE PLAIN exchange against one account, and
// welcomes the client only after CAP END. It records what it received.
type saslServer struct {
	ln       net.Listener
	user, pw string

	mu    sync.Mutex
	lines []string
	wg    sync.WaitGroup
}

func startSASLServer(t *testing.T, user, pw string) *saslServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &saslServer{ln: ln, user: user, pw: pw}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() { s.serve(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *saslServer) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

func (s *saslServer) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

func (s *saslServer) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReader(c)
	say := func(l string) { _, _ = c.Write([]byte(":fake.test " + l + "\r\n")) }
	nick := "*"
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		s.mu.Lock()
		s.lines = append(s.lines, line)
		s.mu.Unlock()
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "CAP" && f[1] == "LS":
			say("CAP * LS :multi-prefix sasl=PLAIN,EXTERNAL")
		case len(f) >= 3 && f[0] == "CAP" && f[1] == "REQ":
			say("CAP * ACK :" + strings.TrimPrefix(strings.Join(f[2:], " "), ":"))
		case len(f) == 2 && f[0] == "AUTHENTICATE" && f[1] == "PLAIN":
			_, _ = c.Write([]byte("AUTHENTICATE +\r\n"))
		case len(f) == 2 && f[0] == "AUTHENTICATE":
			raw, _ := base64.StdEncoding.DecodeString(f[1])
			if string(raw) == s.user+"\x00"+s.user+"\x00"+s.pw {
				say("900 " + nick + " " + nick + "!u@h " + s.user + " :You are now logged in")
				say("903 " + nick + " :SASL authentication successful")
			} else {
				say("904 " + nick + " :SASL authentication failed")
			}
		case len(f) == 2 && f[0] == "NICK":
			nick = f[1]
		case len(f) == 2 && f[0] == "CAP" && f[1] == "END":
			say("001 " + nick + " :Welcome")
		}
	}
}

// TestSASL (against the in-test SASL server): the right password logs in
// before CAP END and the bot is connected; a wrong one stops the channel
// for good (FatalError, health failed) without a second attempt, and the
// password appears in no error.
func TestSASL(t *testing.T) {
	t.Run("accepted", func(t *testing.T) {
		srv := startSASLServer(t, "botacct", "right-password-1")
		ch := newChannel(t, srv.port(), nil, func(c *Config) {
			c.SASL = SASLConfig{User: "botacct", Password: "right-password-1"}
			c.Channels = nil
		})
		run(t, ch, &inbox{})
		waitHealth(t, ch, channels.StateConnected)
		got := strings.Join(srv.received(), "\n")
		if !strings.Contains(got, "CAP REQ sasl") || !strings.Contains(got, "AUTHENTICATE PLAIN") {
			t.Errorf("no SASL exchange:\n%s", got)
		}
		if strings.Index(got, "CAP END") < strings.Index(got, "AUTHENTICATE PLAIN") {
			t.Errorf("CAP END before the SASL exchange:\n%s", got)
		}
	})
	t.Run("rejected", func(t *testing.T) {
		srv := startSASLServer(t, "botacct", "right-password-1")
		ch := newChannel(t, srv.port(), nil, func(c *Config) {
			c.SASL = SASLConfig{User: "botacct", Password: "wrong-password-9"}
		})
		res := run(t, ch, &inbox{})
		var err error
		select {
		case err = <-res:
		case <-time.After(20 * time.Second):
			t.Fatal("Run did not stop after the SASL login was rejected")
		}
		if !channels.IsFatal(err) || !errors.Is(err, ErrSASLRejected) {
			t.Fatalf("Run = %v, want a FatalError wrapping ErrSASLRejected", err)
		}
		if strings.Contains(err.Error(), "wrong-password-9") || strings.Contains(ch.Health().LastError, "wrong-password-9") {
			t.Errorf("the password leaked: %v / %q", err, ch.Health().LastError)
		}
		if h := ch.Health(); h.State != channels.StateFailed {
			t.Errorf("health %+v, want failed", h)
		}
		n := 0
		for _, l := range srv.received() {
			if l == "AUTHENTICATE PLAIN" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d SASL attempts, want 1 (no retrying a rejected login)", n)
		}
	})
}

// TestSASLNotOffered (against ngIRCd, which has no SASL): a configured
// SASL login the server cannot do stops the channel with a clear reason
// instead of connecting unauthenticated.
func TestSASLNotOffered(t *testing.T) {
	srv := irctest.Start(t, irctest.Options{})
	ch := newChannel(t, srv.Port, nil, func(c *Config) { c.SASL = SASLConfig{User: "botacct", Password: "some-password"} })
	res := run(t, ch, &inbox{})
	select {
	case err := <-res:
		if !errors.Is(err, ErrNoSASL) || !channels.IsFatal(err) {
			t.Fatalf("Run = %v, want a FatalError wrapping ErrNoSASL", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not stop")
	}
}

// TestServerPassword (ngIRCd with a server password): the right PASS
// connects; a wrong one is refused by the server and the channel keeps
// retrying with backoff (ngIRCd answers a bad PASS with ERROR, not 464).
func TestServerPassword(t *testing.T) {
	srv := irctest.Start(t, irctest.Options{Password: "server-pass-1"})
	ch := newChannel(t, srv.Port, nil, func(c *Config) { c.Password = "server-pass-1" })
	run(t, ch, &inbox{})
	waitHealth(t, ch, channels.StateConnected)

	bad := newChannel(t, srv.Port, nil, func(c *Config) { c.Password = "server-pass-X"; c.Nick = "badbot" })
	run(t, bad, &inbox{})
	h := waitHealth(t, bad, channels.StateReconnecting)
	if h.LastError == "" || strings.Contains(h.LastError, "server-pass-X") {
		t.Errorf("health %+v: want the refusal, without the password", h)
	}
}

// TestTLS (ngIRCd's TLS port): the bot verifies the server certificate;
// with the test CA trusted it connects and talks, without it the handshake
// fails (tlsInsecureSkipVerify is off by default).
func TestTLS(t *testing.T) {
	srv := irctest.Start(t, irctest.Options{TLS: true})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(srv.CertPEM)
	ch := newChannel(t, srv.TLSPort, nil, func(c *Config) { c.TLS = true })
	ch.tls.RootCAs = pool
	in := &inbox{}
	run(t, ch, in)
	waitHealth(t, ch, channels.StateConnected)
	alice := irctest.Dial(t, srv.Addr(), "alice")
	alice.Join(room)
	newEmitter(t, alice, botNick).send(alice, botNick, "over tls")
	in.wait(t, "over tls")

	untrusted := newChannel(t, srv.TLSPort, nil, func(c *Config) { c.TLS = true; c.Nick = "tlsbot" })
	run(t, untrusted, &inbox{})
	h := waitHealth(t, untrusted, channels.StateReconnecting)
	if !strings.Contains(h.LastError, "certificate") {
		t.Errorf("health %+v: want a certificate error", h)
	}
	var _ *tls.Config = untrusted.tls
}

// TestNickServAndCTCP (ngIRCd): the bot identifies to NickServ after
// connecting (a client holding the nick NickServ receives it; the password
// is in no log line), ignores CTCP ACTION, answers CTCP VERSION with a
// NOTICE, and still delivers ordinary messages after them.
func TestNickServAndCTCP(t *testing.T) {
	srv := irctest.Start(t, irctest.Options{})
	nickserv := irctest.Dial(t, srv.Addr(), "NickServ")
	alice := irctest.Dial(t, srv.Addr(), "alice")
	alice.Join(room)
	logs := &logBuffer{}
	ch := newChannel(t, srv.Port, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), func(c *Config) {
		c.NickservPassword = "nickserv-secret-7"
	})
	in := &inbox{}
	run(t, ch, in)
	nickserv.Wait("IDENTIFY", func(l irctest.Line) bool {
		return l.Msg.Command == "PRIVMSG" && l.Msg.Params[1] == "IDENTIFY nanobot nickserv-secret-7"
	})
	em := newEmitter(t, alice, botNick)
	em.send(alice, botNick, "\x01ACTION waves\x01")
	em.send(alice, botNick, "\x01VERSION\x01")
	em.send(alice, botNick, "plain text")
	in.wait(t, "plain text")
	alice.Wait("the VERSION answer", func(l irctest.Line) bool {
		return l.Msg.Command == "NOTICE" && l.Msg.Nick() == botNick && strings.HasPrefix(l.Msg.Params[1], "\x01VERSION nanobot")
	})
	for _, m := range in.all() {
		if m.Content != "plain text" {
			t.Errorf("CTCP delivered: %+v", m)
		}
	}
	if strings.Contains(logs.String(), "nickserv-secret-7") {
		t.Errorf("the NickServ password is in the log:\n%s", logs.String())
	}
}

type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
