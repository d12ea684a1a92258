// Package xmpptest runs a real Prosody XMPP server for tests: its own
// config, data folder, self-signed certificate (trusted through CAFile)
// and loopback ports, started in the foreground and stopped with the test.
// It also has a small client on the same library the adapter uses, for the
// people the bot talks to, and a TCP proxy that can drop connections.
//
// A Server and a Client are safe for concurrent use.
package xmpptest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/testproc"
)

// Domain and MUC are the server's host and its multi-user chat component.
const (
	Domain = "localhost"
	MUC    = "conference.localhost"
)

// ErrNotInstalled means prosody or prosodyctl is not on PATH.
var ErrNotInstalled = errors.New("prosody is not installed (apt-get install prosody)")

// Server is one Prosody instance.
type Server struct {
	// Addr is the client-to-server port (StartTLS), "127.0.0.1:N".
	Addr string
	// TLSAddr is the direct-TLS client port (XEP-0368).
	TLSAddr string
	// CAFile trusts the server's self-signed certificate.
	CAFile string
	dir    string
	config string

	mu       sync.Mutex
	cmd      *exec.Cmd
	out      *bytes.Buffer
	waitExit chan struct{}
}

// Start runs a fresh server for t, or skips t when Prosody is not
// installed; under CI (env CI set) a missing Prosody fails t instead.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := Launch(t.TempDir())
	if errors.Is(err, ErrNotInstalled) {
		testproc.Missing(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("prosody log:\n%s", s.Log())
		}
		s.Stop()
	})
	return s
}

// Launch starts a server with its files in dir; the caller calls Stop.
func Launch(dir string) (*Server, error) {
	for _, bin := range []string{"prosody", "prosodyctl"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, ErrNotInstalled
		}
	}
	s := &Server{dir: dir, config: filepath.Join(dir, "prosody.cfg.lua"), CAFile: filepath.Join(dir, "cert.pem")}
	if err := writeCert(dir); err != nil {
		return nil, err
	}
	ports, err := testproc.FreePorts(3)
	if err != nil {
		return nil, err
	}
	s.Addr = "127.0.0.1:" + strconv.Itoa(ports[0])
	s.TLSAddr = "127.0.0.1:" + strconv.Itoa(ports[1])
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(s.config, []byte(config(dir, ports)), 0o600); err != nil {
		return nil, err
	}
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

// config is the Prosody configuration: loopback only, no s2s, no HTTP,
// encryption required, hashed passwords, a MUC component whose rooms show
// real JIDs and are usable at once.
func config(dir string, ports []int) string {
	user := "prosody"
	if os.Geteuid() == 0 {
		user = "root" // prosodyctl would switch to the prosody user, who cannot read dir
	}
	return fmt.Sprintf(`-- written by xmpptest
daemonize = false
prosody_user = %[5]q
prosody_group = %[5]q
run_as_root = true
pidfile = %[1]q
data_path = %[2]q
certificates = %[3]q
plugin_paths = {}
modules_enabled = { "roster"; "saslauth"; "tls"; "disco"; "ping"; "posix"; "offline" }
modules_disabled = { "s2s" }
interfaces = { "127.0.0.1" }
local_interfaces = { "127.0.0.1" }
c2s_ports = { %[4]d }
c2s_direct_tls_ports = { %[6]d }
component_ports = { %[7]d }
s2s_ports = {}
http_ports = {}
https_ports = {}
authentication = "internal_hashed"
c2s_require_encryption = true
log = { { levels = { min = "info" }, to = "console" } }
ssl = { certificate = %[8]q; key = %[9]q }
VirtualHost "localhost"
Component "conference.localhost" "muc"
  muc_room_locking = false
  muc_room_default_public_jids = true
`, filepath.Join(dir, "prosody.pid"), filepath.Join(dir, "data"), filepath.Join(dir, "certs"),
		ports[0], user, ports[1], ports[2], filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
}

// Register creates an account with prosodyctl.
func (s *Server) Register(user, password string) error {
	out, err := exec.Command("prosodyctl", "--config", s.config, "register", user, Domain, password).CombinedOutput()
	if err != nil {
		return fmt.Errorf("prosodyctl register %s: %w: %s", user, err, out)
	}
	return nil
}

// MustRegister is Register that fails t.
func (s *Server) MustRegister(t testing.TB, user, password string) {
	t.Helper()
	if err := s.Register(user, password); err != nil {
		t.Fatal(err)
	}
}

// start runs prosody in the foreground and waits for its port.
func (s *Server) start() error {
	cmd := exec.Command("prosody", "--config", s.config, "-F")
	out := &bytes.Buffer{}
	cmd.Stdout = &syncWriter{w: out, mu: &s.mu}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start prosody: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.out, s.waitExit = cmd, out, exited
	s.mu.Unlock()
	if err := testproc.WaitListening([]string{s.Addr}, exited, 15*time.Second); err != nil {
		s.Stop()
		return fmt.Errorf("prosody: %w: %s", err, s.Log())
	}
	return nil
}

// Stop ends the server and waits for it.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.waitExit
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	testproc.Stop(cmd, exited, 10*time.Second)
}

// Restart stops the server and starts it again on the same ports and data.
func (s *Server) Restart() error {
	s.Stop()
	return s.start()
}

// Log is what the server printed.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out == nil {
		return ""
	}
	return s.out.String()
}

type syncWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// writeCert writes a self-signed ECDSA certificate for the server and its
// MUC component (cert.pem, key.pem; the key 0600).
func writeCert(dir string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: Domain},
		DNSNames:     []string{Domain, MUC},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
}
