package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
)

// Run connects the long connection and handles events until ctx ends; it
// reconnects with backoff after failures and returns nil when ctx ends, or
// an error when the platform refuses the app's credentials.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	defer c.tr.CloseIdleConnections()
	defer c.bg.Wait()
	loop := &channels.Loop{Name: "feishu", Log: c.log, Health: &c.health, Redact: c.redact.Error, Min: c.backoffMin, Max: c.backoffMax}
	return loop.Run(ctx, func(ctx context.Context, up func()) error { return c.session(ctx, in, up) })
}

// Endpoint codes worth retrying (system busy, internal error).
var retryCodes = map[string]bool{"1": true, "1000040343": true}

// session is one long connection's life.
func (c *Channel) session(ctx context.Context, in channels.Inbox, up func()) error {
	if _, err := c.tokens.Get(ctx); err != nil {
		if rejected(err) {
			return channels.Fatal(err)
		}
		return err
	}
	if c.self() == "" {
		id, err := c.fetchBotID(ctx)
		if err != nil {
			if rejected(err) {
				return channels.Fatal(err)
			}
			return err
		}
		c.mu.Lock()
		c.botID = id
		c.mu.Unlock()
	}
	wsURL, cc, err := c.endpoint(ctx)
	if err != nil {
		var ae *kit.APIError
		if errors.As(err, &ae) && !retryCodes[ae.Code] && rejected(err) {
			return channels.Fatal(err)
		}
		return err
	}
	u, err := url.Parse(wsURL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") {
		return errors.New("feishu: the endpoint returned a URL that is not ws(s)")
	}
	for _, vs := range u.Query() { // access keys and tickets
		c.redact.Add(vs...)
	}
	service, _ := strconv.ParseInt(u.Query().Get("service_id"), 10, 32)
	conn, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: &http.Client{Transport: c.tr}})
	if err != nil {
		return fmt.Errorf("feishu: dialing the long connection: %s", c.redact.Error(err))
	}
	defer conn.CloseNow()
	conn.SetReadLimit(16 << 20)
	c.log.Info("feishu: long connection up")
	up()

	s := &wsSession{c: c, conn: conn, in: in, service: int32(service), parts: map[string]*partial{}}
	s.setPing(cc.PingInterval)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan *Frame, 64)
	var wg sync.WaitGroup
	wg.Go(func() { s.pinger(ctx) })
	wg.Go(func() { s.worker(ctx, events) })
	err = s.reader(ctx, events)
	cancel() // a Read whose context ends closes the socket
	wg.Wait()
	return err
}

// wsSession is the state of one connection.
type wsSession struct {
	c       *Channel
	conn    *websocket.Conn
	in      channels.Inbox
	service int32

	mu   sync.Mutex
	ping time.Duration

	parts map[string]*partial // reader goroutine only
}

// partial is a payload split across frames, waiting for its other parts.
type partial struct {
	chunks [][]byte
	got    int
	size   int
	first  time.Time
}

// Limits on split payloads.
const (
	maxParts       = 64
	maxPayloadSize = 16 << 20
)

func (s *wsSession) setPing(seconds int) {
	if seconds <= 0 {
		return
	}
	s.mu.Lock()
	s.ping = time.Duration(seconds) * time.Second
	s.mu.Unlock()
}

func (s *wsSession) pingEvery() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ping <= 0 {
		return 2 * time.Minute
	}
	return s.ping
}

// write sends one frame (coder/websocket serialises concurrent writers).
func (s *wsSession) write(ctx context.Context, f *Frame) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return s.conn.Write(ctx, websocket.MessageBinary, f.Marshal())
}

// pinger sends a ping control frame every PingInterval.
func (s *wsSession) pinger(ctx context.Context) {
	for {
		if err := s.write(ctx, &Frame{Service: s.service, Method: MethodControl, Headers: []Header{{HeaderType, TypePing}}}); err != nil {
			if ctx.Err() == nil {
				s.c.log.Debug("feishu: ping failed", "err", s.c.redact.Error(err))
			}
		}
		t := time.NewTimer(s.pingEvery())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// reader reads frames until the connection breaks: pongs reconfigure the
// ping interval, data frames are reassembled and queued for the worker.
// Silence for three ping intervals counts as a dead connection.
func (s *wsSession) reader(ctx context.Context, events chan<- *Frame) error {
	for {
		rctx, cancel := context.WithTimeout(ctx, 3*s.pingEvery()+10*time.Second)
		typ, data, err := s.conn.Read(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("feishu: long connection: %s", s.c.redact.Error(err))
		}
		if typ != websocket.MessageBinary {
			s.c.log.Warn("feishu: non-binary message on the long connection skipped", "bytes", len(data))
			continue
		}
		f, err := UnmarshalFrame(data)
		if err != nil {
			s.c.log.Warn("feishu: undecodable frame skipped", "err", err, "bytes", len(data))
			continue
		}
		switch f.Method {
		case MethodControl:
			s.control(f)
		case MethodData:
			full := s.reassemble(f)
			if full == nil {
				continue
			}
			select {
			case events <- full:
			case <-ctx.Done():
				return nil
			}
		default:
			s.c.log.Warn("feishu: frame with unknown method skipped", "method", f.Method)
		}
	}
}

func (s *wsSession) control(f *Frame) {
	if f.Get(HeaderType) != TypePong || len(f.Payload) == 0 {
		return
	}
	var cc clientConfig
	if err := json.Unmarshal(f.Payload, &cc); err != nil {
		s.c.log.Warn("feishu: pong with an undecodable client config", "err", err)
		return
	}
	s.setPing(cc.PingInterval)
}

// reassemble returns the frame with its whole payload: f itself when it was
// not split, the last part with all parts joined in seq order once every
// part arrived, nil while parts are missing or when the split is invalid.
func (s *wsSession) reassemble(f *Frame) *Frame {
	sum := f.GetInt(HeaderSum, 1)
	if sum <= 1 {
		return f
	}
	id := f.Get(HeaderMessageID)
	seq := f.GetInt(HeaderSeq, -1)
	now := time.Now()
	for k, p := range s.parts {
		if now.Sub(p.first) > s.c.fragmentTTL {
			s.c.log.Warn("feishu: incomplete split payload dropped", "message_id", k, "parts", p.got, "of", len(p.chunks))
			delete(s.parts, k)
		}
	}
	if id == "" || sum > maxParts || seq < 0 || seq >= sum {
		s.c.log.Warn("feishu: data frame with an invalid split skipped", "message_id", id, "sum", sum, "seq", seq)
		return nil
	}
	p := s.parts[id]
	if p == nil || len(p.chunks) != sum {
		p = &partial{chunks: make([][]byte, sum), first: now}
		s.parts[id] = p
	}
	if p.chunks[seq] == nil {
		p.got++
		p.size += len(f.Payload)
	}
	p.chunks[seq] = append([]byte{}, f.Payload...)
	if p.size > maxPayloadSize {
		s.c.log.Warn("feishu: split payload too large; dropped", "message_id", id, "bytes", p.size)
		delete(s.parts, id)
		return nil
	}
	if p.got < sum {
		return nil
	}
	delete(s.parts, id)
	joined := make([]byte, 0, p.size)
	for _, ch := range p.chunks {
		joined = append(joined, ch...)
	}
	out := *f
	out.Payload = joined
	return &out
}

// worker handles complete data frames in order and acknowledges each.
func (s *wsSession) worker(ctx context.Context, events <-chan *Frame) {
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-events:
			start := time.Now()
			ack := true
			if f.Get(HeaderType) == TypeEvent {
				ack = s.c.handleEvent(ctx, s.in, f.Payload)
			}
			if !ack || ctx.Err() != nil {
				continue // the platform delivers it again
			}
			s.ack(ctx, f, time.Since(start))
		}
	}
}

// ackPayload is the response to a handled data frame.
var ackPayload = []byte(`{"code":200,"headers":{},"data":null}`)

// ack echoes the frame with the OK response, so that the platform does not
// deliver the event again.
func (s *wsSession) ack(ctx context.Context, f *Frame, took time.Duration) {
	out := *f
	out.Headers = append([]Header(nil), f.Headers...)
	out.Set(HeaderBizRT, strconv.FormatInt(took.Milliseconds(), 10))
	out.Payload = ackPayload
	if err := s.write(ctx, &out); err != nil && ctx.Err() == nil {
		s.c.log.Warn("feishu: acknowledging an event failed", "message_id", f.Get(HeaderMessageID), "err", s.c.redact.Error(err))
	}
}
