package signal

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// request is a JSON-RPC 2.0 request.
type request struct {
	JSONRPC string         `json:"jsonrpc"`
	Method  string         `json:"method"`
	Params  map[string]any `json:"params,omitempty"`
	ID      string         `json:"id"`
}

// message is anything signal-cli writes: a response (ID set) or a
// notification (Method set).
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// RPCError is signal-cli's error answer to a request.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("signal-cli error %d: %s", e.Code, e.Message) }

// signal-cli's error codes (signal-cli-jsonrpc(5) and its command handler).
const (
	codeUserError     = -1 // e.g. an unregistered recipient, a bad group id
	codeIOError       = -3 // the Signal server could not be reached
	codeUntrustedKey  = -4
	codeInvalidParams = -32602 // e.g. "Specified account does not exist"
	codeInvalidReq    = -32600
	codeNoMethod      = -32601
)

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// call runs one request over the configured transport and decodes its
// result into out (nil ignores it). The account is always named, so a
// multi-account daemon works as well as a single-account one.
func (c *Channel) call(ctx context.Context, method string, params map[string]any, out any) error {
	if params == nil {
		params = map[string]any{}
	}
	params["account"] = c.cfg.Account
	req := request{JSONRPC: "2.0", Method: method, Params: params, ID: newID()}
	var resp message
	var err error
	if c.cfg.TCPAddr != "" {
		resp, err = c.callTCP(ctx, req)
	} else {
		resp, err = c.callHTTP(ctx, req)
	}
	if err != nil {
		return fmt.Errorf("signal: %s: %s", method, c.redact.Error(err))
	}
	if resp.Error != nil {
		return fmt.Errorf("signal: %s: %w", method, resp.Error)
	}
	if out == nil || len(resp.Result) == 0 {
		return nil
	}
	if err := json.Unmarshal(resp.Result, out); err != nil {
		return fmt.Errorf("signal: %s: decoding the result: %w", method, err)
	}
	return nil
}

// maxResponse caps one answer; getAttachment answers carry the file in
// base64.
func (c *Channel) maxResponse() int64 { return c.cfg.MaxMediaBytes*4/3 + 1<<20 }

func (c *Channel) callHTTP(ctx context.Context, r request) (message, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return message{}, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.HTTPURL+"/api/v1/rpc", bytes.NewReader(body))
	if err != nil {
		return message{}, err
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(hr)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return message{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.maxResponse()+1))
	if err != nil {
		return message{}, fmt.Errorf("reading the answer: %w", err)
	}
	if int64(len(data)) > c.maxResponse() {
		return message{}, fmt.Errorf("answer larger than %d bytes", c.maxResponse())
	}
	if resp.StatusCode != http.StatusOK {
		return message{}, fmt.Errorf("HTTP %d from %s/api/v1/rpc", resp.StatusCode, c.cfg.HTTPURL)
	}
	var m message
	if err := json.Unmarshal(data, &m); err != nil {
		return message{}, fmt.Errorf("unreadable answer: %w", err)
	}
	return m, nil
}

// rpcConn is one TCP connection to the daemon with the requests waiting for
// their responses.
type rpcConn struct {
	conn    net.Conn
	wmu     sync.Mutex                   // one writer at a time
	waiting kit.Waiters[string, message] // request id -> the call waiting for it
	closed  chan struct{}                // closed when the reader stopped
	err     error                        // why it stopped; read after closed
}

func (c *Channel) callTCP(ctx context.Context, r request) (message, error) {
	c.mu.Lock()
	k := c.tcpConn
	c.mu.Unlock()
	if k == nil {
		return message{}, errors.New("not connected to signal-cli")
	}
	ch, forget, ok := k.waiting.Wait(r.ID)
	if !ok {
		return message{}, fmt.Errorf("request id %s is already waiting", r.ID)
	}
	defer forget()
	line, err := json.Marshal(r)
	if err != nil {
		return message{}, err
	}
	k.wmu.Lock()
	_ = k.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err = k.conn.Write(append(line, '\n'))
	k.wmu.Unlock()
	if err != nil {
		return message{}, err
	}
	t := time.NewTimer(c.http.Timeout)
	defer t.Stop()
	select {
	case m := <-ch:
		return m, nil
	case <-k.closed:
		return message{}, errors.New("the connection to signal-cli closed before it answered")
	case <-t.C:
		return message{}, fmt.Errorf("no answer within %s", c.http.Timeout)
	case <-ctx.Done():
		return message{}, ctx.Err()
	}
}

// Run connects to signal-cli and delivers received messages to in until
// ctx ends; it returns nil then. It reconnects with backoff; an account
// signal-cli does not have ends it.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	loop := &channels.Loop{Name: "signal", Log: c.log, Health: &c.health, Redact: c.redact.Error, Min: c.backoffMin, Max: c.backoffMax}
	err := loop.Run(ctx, func(ctx context.Context, up func()) error {
		if c.cfg.TCPAddr != "" {
			return c.sessionTCP(ctx, in, up)
		}
		return c.sessionHTTP(ctx, in, up)
	})
	c.http.CloseIdleConnections()
	c.stream.CloseIdleConnections()
	return err
}

// probe asks signal-cli for the account's groups: it proves the daemon
// answers JSON-RPC and has the account.
func (c *Channel) probe(ctx context.Context) error {
	var groups []json.RawMessage
	err := c.call(ctx, "listGroups", nil, &groups)
	var re *RPCError
	if errors.As(err, &re) && re.Code == codeInvalidParams {
		return channels.Fatal(fmt.Errorf("signal: signal-cli does not have the account %s (%s); register or link it with signal-cli first", c.cfg.Account, re.Message))
	}
	return err
}

// sessionHTTP is one life of the event stream.
func (c *Channel) sessionHTTP(ctx context.Context, in channels.Inbox, up func()) error {
	if err := c.probe(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.HTTPURL+"/api/v1/events?account="+url.QueryEscape(c.cfg.Account), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", c.cursor())
	resp, err := c.stream.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("signal: event stream: %s", c.redact.Error(err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusBadRequest:
		return channels.Fatal(fmt.Errorf("signal: signal-cli refused the event stream for %s (HTTP 400: it does not have this account)", c.cfg.Account))
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("signal: event stream: HTTP %d", resp.StatusCode)
	}
	up()

	// A watchdog ends the stream when it stays silent too long.
	alive := make(chan struct{}, 1)
	go func() {
		t := time.NewTimer(c.idle)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-alive:
				if !t.Stop() {
					<-t.C
				}
				t.Reset(c.idle)
			case <-t.C:
				c.log.Warn("signal: event stream silent; reconnecting", "for", c.idle)
				cancel()
				return
			}
		}
	}()
	err = readSSE(resp.Body, func() {
		select {
		case alive <- struct{}{}:
		default:
		}
	}, func(ev sseEvent) error {
		if ev.Name != "receive" && ev.Name != "" {
			return nil
		}
		if err := c.receive(ctx, in, []byte(ev.Data)); err != nil {
			return err
		}
		if ev.ID != "" {
			c.advance(ev.ID)
		}
		return nil
	})
	if ctx.Err() != nil {
		return nil
	}
	if err == nil {
		err = errors.New("signal-cli closed the event stream")
	}
	return fmt.Errorf("signal: event stream: %s", c.redact.Error(err))
}

// noCursor is sent as Last-Event-ID when no event was handled yet: an id
// signal-cli never issues, so it replays every event it kept.
const noCursor = "nanobot-start"

// cursor returns the Last-Event-ID to resume from, reading the state file
// once. Without one, it sets since: of the replay that follows, only
// messages sent from now on are taken.
func (c *Channel) cursor() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.loaded {
		c.loaded = true
		if c.cursorFile != "" {
			if b, err := os.ReadFile(c.cursorFile); err == nil {
				c.lastID = strings.TrimSpace(string(b))
			} else if !errors.Is(err, os.ErrNotExist) {
				c.log.Warn("signal: reading the event cursor failed; starting without", "err", err)
			}
		}
		if c.lastID == "" {
			c.since = time.Now().Add(-time.Minute)
		}
	}
	if c.lastID == "" {
		return noCursor
	}
	return c.lastID
}

// advance records that event id was handled.
func (c *Channel) advance(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastID = id
	if c.cursorFile == "" {
		return
	}
	if err := (atomicfile.Options{NoSync: true}).Write(c.cursorFile, []byte(id+"\n"), 0o600); err != nil {
		c.log.Warn("signal: saving the event cursor failed", "err", err)
	}
}

// sseEvent is one Server-Sent Event.
type sseEvent struct{ ID, Name, Data string }

// maxEventBytes caps one event line.
const maxEventBytes = 4 << 20

// readSSE reads events from r until it ends or handle fails; seen is called
// for every line, keep-alive comments included.
func readSSE(r io.Reader, seen func(), handle func(sseEvent) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxEventBytes)
	var ev sseEvent
	var data []string
	for sc.Scan() {
		seen()
		line := sc.Text()
		if line == "" {
			if len(data) > 0 {
				ev.Data = joinLines(data)
				if err := handle(ev); err != nil {
					return err
				}
			}
			ev, data = sseEvent{ID: ev.ID}, nil
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := cutField(line)
		switch field {
		case "id":
			ev.ID = value
		case "event":
			ev.Name = value
		case "data":
			data = append(data, value)
		}
	}
	return sc.Err()
}

func cutField(line string) (string, string, bool) {
	for i := 0; i < len(line); i++ {
		if line[i] == ':' {
			v := line[i+1:]
			if len(v) > 0 && v[0] == ' ' {
				v = v[1:]
			}
			return line[:i], v, true
		}
	}
	return line, "", false
}

func joinLines(lines []string) string {
	var b bytes.Buffer
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
	}
	return b.String()
}

// sessionTCP is one life of the TCP connection.
func (c *Channel) sessionTCP(ctx context.Context, in channels.Inbox, up func()) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.cfg.TCPAddr)
	if err != nil {
		return fmt.Errorf("signal: connecting to %s: %w", c.cfg.TCPAddr, err)
	}
	k := &rpcConn{conn: conn, closed: make(chan struct{})}
	ctx, cancel := context.WithCancel(ctx)
	notes := make(chan message, 64)
	go func() {
		k.err = c.readTCP(ctx, k, notes)
		close(k.closed)
	}()
	defer func() {
		cancel()
		_ = conn.Close()
		<-k.closed
	}()
	defer channels.Publish(&c.mu, &c.tcpConn, k)()
	// The probe's answer comes through the reader; notifications read
	// before it wait in notes until the loop below.
	if err := c.probe(ctx); err != nil {
		return err
	}
	up()
	for {
		select {
		case <-ctx.Done():
			return nil
		case n := <-notes:
			c.notification(ctx, in, n)
		case <-k.closed:
		drain:
			for {
				select {
				case n := <-notes:
					c.notification(ctx, in, n)
				default:
					break drain
				}
			}
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("signal: connection: %s", c.redact.Error(k.err))
		}
	}
}

func (c *Channel) notification(ctx context.Context, in channels.Inbox, n message) {
	if n.Method != "receive" {
		return
	}
	err := c.receive(ctx, in, n.Params)
	var nt *notTakenError
	switch {
	case errors.As(err, &nt):
		// signal-cli does not send a notification twice over TCP.
		channels.ReportLost(in, nt.m, nt.err, c.log)
	case err != nil && ctx.Err() == nil:
		c.log.Error("signal: a message could not be queued and is lost", "err", err)
	}
}

// readTCP reads lines until the connection fails, handing responses to
// their callers and notifications to notes.
func (c *Channel) readTCP(ctx context.Context, k *rpcConn, notes chan<- message) error {
	sc := bufio.NewScanner(k.conn)
	sc.Buffer(make([]byte, 64<<10), int(c.maxResponse()))
	for sc.Scan() {
		var m message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			c.log.Warn("signal: unreadable line from signal-cli skipped", "bytes", len(sc.Bytes()), "err", err)
			continue
		}
		if m.Method != "" {
			select {
			case notes <- m:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		var id string
		if json.Unmarshal(m.ID, &id) != nil {
			id = string(m.ID)
		}
		if !k.waiting.Deliver(id, m) {
			c.log.Debug("signal: answer for no waiting request", "id", id)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.EOF
}
