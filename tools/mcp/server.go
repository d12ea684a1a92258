package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// version is what nanobot tells servers it is.
const version = "1.0"

// server is one configured MCP server and its supervisor's state.
type server struct {
	m      *Manager
	name   string
	cfg    configs.MCPServerConfig
	client *sdk.Client
	log    *slog.Logger

	firstTry  chan struct{} // closed after the first attempt
	firstOnce sync.Once

	mu    sync.Mutex
	sess  *sdk.ClientSession
	ready chan struct{} // closed while sess is set
	st    Status
	tools map[string]*tool // by registered name
	cmd   *exec.Cmd        // the stdio server's latest process
}

func newServer(m *Manager, name string, cfg configs.MCPServerConfig) *server {
	s := &server{
		m: m, name: name, cfg: cfg,
		client:   sdk.NewClient(&sdk.Implementation{Name: "nanobot", Version: version}, nil),
		log:      m.log.With("mcp_server", name),
		firstTry: make(chan struct{}),
		ready:    make(chan struct{}),
		tools:    map[string]*tool{},
	}
	s.st = Status{Name: name, Transport: cfg.Type, State: StateConnecting, Since: time.Now()}
	return s
}

func (s *server) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.Tools = len(s.tools)
	return st
}

func (s *server) setState(state State, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	msg := ""
	if err != nil {
		msg = err.Error()
		if s.m.opts.Redact != nil {
			msg = s.m.opts.Redact(msg)
		}
	}
	if s.st.State != state || s.st.LastError != msg {
		s.st.State, s.st.LastError, s.st.Since = state, msg, time.Now()
	}
}

// supervise connects and reconnects until ctx ends.
func (s *server) supervise(ctx context.Context) {
	defer s.shutdown()
	backoff := s.m.opts.BackoffMin
	for {
		s.setState(StateConnecting, nil)
		start := time.Now()
		err := s.runOnce(ctx)
		if ctx.Err() != nil {
			s.firstOnce.Do(func() { close(s.firstTry) })
			return
		}
		if time.Since(start) > 2*s.m.opts.BackoffMax {
			backoff = s.m.opts.BackoffMin // it ran for a good while: start over
		}
		s.setState(StateFailed, err)
		s.mu.Lock()
		s.st.Restarts++
		s.mu.Unlock()
		s.firstOnce.Do(func() { close(s.firstTry) })
		// Full jitter in [backoff/2, backoff).
		wait := backoff/2 + rand.N(backoff/2+1)
		s.log.Warn("mcp server unavailable; retrying", "err", err, "retry_in", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		backoff = min(backoff*2, s.m.opts.BackoffMax)
	}
}

// runOnce connects, registers the tools and waits for the connection to
// end. It returns why it ended.
func (s *server) runOnce(ctx context.Context) error {
	tr, err := s.transport(ctx)
	if err != nil {
		return err
	}
	// The connection lives in connCtx (an SSE stream is bound to the
	// context it was opened with); the connect timeout cancels it only while
	// connecting.
	connCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	timer := time.AfterFunc(s.m.opts.ConnectTimeout, cancel)
	sess, err := s.client.Connect(connCtx, tr, nil)
	if err != nil {
		timer.Stop()
		return fmt.Errorf("connect: %w", err)
	}
	list, err := listTools(connCtx, sess)
	if !timer.Stop() && err == nil {
		err = fmt.Errorf("no answer within %s", s.m.opts.ConnectTimeout)
	}
	if err != nil {
		_ = sess.Close()
		return fmt.Errorf("list tools: %w", err)
	}
	n := s.register(list)
	s.mu.Lock()
	s.sess = sess
	close(s.ready)
	s.mu.Unlock()
	s.setState(StateConnected, nil)
	s.log.Info("mcp server connected", "transport", s.cfg.Type, "tools", n)
	s.firstOnce.Do(func() { close(s.firstTry) })

	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = sess.Close()
		<-done
		err = ctx.Err()
	}
	s.mu.Lock()
	if s.sess == sess { // drop may have cleared it already
		s.sess = nil
		s.ready = make(chan struct{})
	}
	s.mu.Unlock()
	if err == nil {
		err = errors.New("connection closed")
	}
	return fmt.Errorf("connection ended: %w", err)
}

// session returns the live session, waiting for a reconnect within ctx.
func (s *server) session(ctx context.Context) (*sdk.ClientSession, error) {
	for {
		s.mu.Lock()
		sess, ready, st := s.sess, s.ready, s.st
		s.mu.Unlock()
		if sess != nil {
			return sess, nil
		}
		select {
		case <-ready:
		case <-ctx.Done():
			if st.LastError != "" {
				return nil, fmt.Errorf("mcp server %s is not connected (%s)", s.name, st.LastError)
			}
			return nil, fmt.Errorf("mcp server %s is not connected", s.name)
		}
	}
}

// drop closes sess if it is still the live one, so the supervisor
// reconnects (used when a call fails at the transport level, as when an
// HTTP server restarted and forgot the session).
func (s *server) drop(sess *sdk.ClientSession) {
	s.mu.Lock()
	live := s.sess == sess
	if live {
		// Callers wait for the next session from now on.
		s.sess = nil
		s.ready = make(chan struct{})
	}
	s.mu.Unlock()
	if live {
		_ = sess.Close()
	}
}

// shutdown removes the server's tools when the Manager closes.
func (s *server) shutdown() {
	s.mu.Lock()
	names := make([]string, 0, len(s.tools))
	for n := range s.tools {
		names = append(names, n)
	}
	s.tools = map[string]*tool{}
	s.mu.Unlock()
	for _, n := range names {
		s.m.reg.Unregister(n)
	}
	s.setState(StateStopped, nil)
}

// transport builds the connection for the server's type.
func (s *server) transport(ctx context.Context) (sdk.Transport, error) {
	switch s.cfg.Type {
	case "stdio":
		env := sandbox.BaseEnv("")
		for k, v := range s.cfg.Env {
			env = sandbox.SetEnv(env, k, v)
		}
		dir := s.cfg.Cwd
		if dir == "" {
			// The workspace may not exist yet on a first start.
			dir = s.m.opts.Dir
			if dir != "" {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					return nil, fmt.Errorf("working folder: %w", err)
				}
			}
		} else if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("cwd %s is not a folder", dir)
		}
		mode := s.m.opts.Sandbox
		if s.cfg.Sandbox != "" {
			mode = sandbox.Mode(s.cfg.Sandbox)
		}
		unixSockets := s.m.opts.AllowUnixSockets
		if s.cfg.AllowUnixSockets != nil {
			unixSockets = *s.cfg.AllowUnixSockets
		}
		ro, rw := serverPaths(s.cfg, dir)
		cmd, err := sandbox.Command(ctx, sandbox.Spec{
			Path: s.cfg.Command, Args: s.cfg.Args, Dir: dir, Env: env,
			Stderr: newLineLogger(s.log), Mode: mode,
			Writable:    append(append([]string{}, s.m.opts.Writable...), rw...),
			Readable:    append(append([]string{}, s.m.opts.Readable...), ro...),
			DenyNetwork: s.m.opts.DenyNetwork, AllowUnixSockets: unixSockets, Limits: s.m.opts.Limits,
		})
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", s.cfg.Command, err)
		}
		s.mu.Lock()
		s.cmd = cmd
		s.mu.Unlock()
		return &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
	case "sse", "streamableHttp":
		hc, err := s.httpClient()
		if err != nil {
			return nil, err
		}
		if s.cfg.Type == "sse" {
			return &sdk.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc}, nil
		}
		return &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc, MaxRetries: 2}, nil
	}
	return nil, fmt.Errorf("unknown transport %q", s.cfg.Type)
}

func (s *server) httpClient() (*http.Client, error) {
	rt := http.DefaultTransport
	if len(s.cfg.Headers) > 0 {
		rt = headerTransport{headers: s.cfg.Headers, next: rt}
	}
	if IsOAuth(s.cfg) {
		return s.oauthClient(rt)
	}
	return &http.Client{Transport: rt}, nil
}

// headerTransport adds the configured headers (tokens) to every request.
type headerTransport struct {
	headers map[string]string
	next    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.next.RoundTrip(r)
}

// listTools reads every page of the server's tool list.
func listTools(ctx context.Context, sess *sdk.ClientSession) ([]*sdk.Tool, error) {
	var out []*sdk.Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
