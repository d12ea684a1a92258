// Package irctest runs a real IRC server (ngIRCd, Debian package ngircd)
// for tests, and a plain IRC client that plays the users talking to the
// bot.
//
// Start writes an ngircd.conf into a temporary folder (loopback only, free
// ports, no DNS, ident or PAM, an IRC operator for KILL, optionally a TLS
// port with a fresh self-signed certificate), starts `ngircd -n` and waits
// until it accepts connections. Without ngircd installed the test is
// skipped, and fails when the CI environment variable is set (CI installs
// it, so a missing server is a broken CI, not a reason to skip).
//
// Concurrency: a Server is driven by the test goroutine; a Client's methods
// may be called from any goroutine.
package irctest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/testproc"
)

// Operator credentials of every test server (for KILL).
const (
	OperName     = "tester"
	OperPassword = "oper-secret-1"
)

// Options shape the server.
type Options struct {
	// TLS adds a TLS port (Server.TLSPort) with a self-signed certificate
	// for 127.0.0.1 (Server.CertPEM).
	TLS bool
	// Password is the server password clients must send (PASS).
	Password string
}

// Server is one ngIRCd process.
type Server struct {
	// Host is 127.0.0.1; Port the plain port, TLSPort the TLS one (0 without).
	Host          string
	Port, TLSPort int
	// CertPEM is the TLS certificate, for the client's RootCAs.
	CertPEM []byte

	t    testing.TB
	bin  string
	conf string

	mu   sync.Mutex
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan struct{}
}

// Binary returns the ngircd executable, or skips the test without one
// (fails it under CI).
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("ngircd")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/ngircd"); serr == nil {
			return "/usr/sbin/ngircd"
		}
		testproc.Missing(t, "ngircd is not installed (apt-get install ngircd; .ci/run installs it): the tests against a real IRC server cannot run")
	}
	return bin
}

// Start starts a server and stops it when the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	s := &Server{Host: "127.0.0.1", t: t, bin: Binary(t)}
	dir := t.TempDir()
	// ngircd drops root privileges to nobody: its files must be readable.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s.Port = freePort(t)
	ports := fmt.Sprintf("Ports = %d\n", s.Port)
	ssl := ""
	if o.TLS {
		s.TLSPort = freePort(t)
		certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		s.CertPEM = writeCert(t, certFile, keyFile)
		ssl = fmt.Sprintf("[SSL]\nCertFile = %s\nKeyFile = %s\nPorts = %d\n", certFile, keyFile, s.TLSPort)
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "ServerUID = 65534\nServerGID = 65534\n"
	}
	pass := ""
	if o.Password != "" {
		pass = "Password = " + o.Password + "\n"
	}
	conf := "[Global]\nName = irc.nanobot.test\nInfo = nanobot test server\nListen = 127.0.0.1\n" + ports + user + pass +
		"MotdPhrase = \"nanobot test server\"\nAdminInfo1 = test\nAdminInfo2 = test\nAdminEMail = test@example.test\n" +
		"[Limits]\nMaxConnectionsIP = 0\nMaxNickLength = 20\nPingTimeout = 120\nPongTimeout = 20\nConnectRetry = 60\n" +
		"[Options]\nPAM = no\nIdent = no\nDNS = no\nOperCanUseMode = yes\n" +
		"[Operator]\nName = " + OperName + "\nPassword = " + OperPassword + "\n" + ssl
	s.conf = filepath.Join(dir, "ngircd.conf")
	if err := os.WriteFile(s.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

// Addr is host:port of the plain port.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

func (s *Server) start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(s.bin, "-n", "-f", s.conf)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = &lockedWriter{w: out}, &lockedWriter{w: out}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start ngircd: %v", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.cmd, s.out, s.done = cmd, out, done
	var addrs []string
	for _, p := range []int{s.Port, s.TLSPort} {
		if p != 0 {
			addrs = append(addrs, net.JoinHostPort(s.Host, strconv.Itoa(p)))
		}
	}
	if err := testproc.WaitListening(addrs, done, 15*time.Second); err != nil {
		s.t.Fatalf("ngircd: %v:\n%s", err, s.out.String())
	}
}

// Stop ends the server (SIGTERM, then SIGKILL after 5 s) and waits for it.
// Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	testproc.Stop(cmd, done, 5*time.Second)
}

// Restart starts the server again on the same ports after Stop.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Log is what ngircd printed so far.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out == nil {
		return ""
	}
	return s.out.String()
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func freePort(t testing.TB) int {
	t.Helper()
	ports, err := testproc.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// writeCert writes a self-signed certificate for 127.0.0.1 and its key,
// and returns the certificate.
func writeCert(t testing.TB, certFile, keyFile string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "irc.nanobot.test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	// Readable by the unprivileged server user; a throwaway test key.
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o644); err != nil {
		t.Fatal(err)
	}
	return certPEM
}
