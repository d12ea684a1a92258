// Package natstest runs a real NATS server with JetStream inside a test
// process: random loopback port, storage in t.TempDir(), stopped by
// t.Cleanup. Restart stops it and starts it again on the same port and
// store, to test reconnection without losing what JetStream acknowledged.
//
// Concurrency: Stop may be called from any goroutine, also concurrently with
// itself. Start, Restart and Connect call t.Fatal and belong to the
// goroutine running the test, and URL must not be called concurrently with
// Restart, which sets the port again. The server's own goroutines run until
// Stop (or t.Cleanup).
package natstest

import (
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Server is an embedded NATS server.
type Server struct {
	t    testing.TB
	dir  string
	port int

	mu  sync.Mutex
	srv *server.Server
}

// Start starts a server on a random port with JetStream storing under a
// temporary folder.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, dir: t.TempDir(), port: -1}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start() {
	s.t.Helper()
	opts := &server.Options{
		Host: "127.0.0.1", Port: s.port, JetStream: true, StoreDir: s.dir,
		NoLog: true, NoSigs: true, ServerName: "nanobot-test",
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		s.t.Fatalf("natstest: %v", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		s.t.Fatal("natstest: server not ready")
	}
	s.port = srv.Addr().(*net.TCPAddr).Port
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
}

// URL is the client URL.
func (s *Server) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(s.port) }

// Stop shuts the server down (idempotent).
func (s *Server) Stop() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// Restart stops the server and starts it again on the same port and store.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Connect returns a client that reconnects forever, closed by t.Cleanup.
func (s *Server) Connect(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatalf("natstest: connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}
