package web

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/nanobot-go/nanobot/channels/channeltest"
)

// browsers plays the browser tabs of the conformance suite's users: one
// real WebSocket client per user, dialled on first use (and again after a
// drop), recording every message and edit the gateway shows.
type browsers struct {
	t     *testing.T
	url   string
	token string

	mu    sync.Mutex
	conns map[string]*websocket.Conn
	sent  []channeltest.Sent
	n     int
}

func chatOf(user string) string { return user + "-browser-0001" }

func (b *browsers) conn(user string) *websocket.Conn {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.conns[user]; c != nil {
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, b.url, nil)
	if err != nil {
		b.t.Errorf("dial %s: %v", b.url, err)
		return nil
	}
	c.SetReadLimit(4 << 20)
	chat := chatOf(user)
	if err := wsjson.Write(ctx, c, Frame{Type: "auth", Chat: chat, Token: b.token}); err != nil {
		b.t.Errorf("auth: %v", err)
	}
	var hello Frame
	if err := wsjson.Read(ctx, c, &hello); err != nil || hello.Type != "hello" || hello.Chat != chat {
		b.t.Errorf("hello = %+v, %v", hello, err)
	}
	go b.read(c, chat)
	b.conns[user] = c
	return c
}

// read records what the tab shows until the socket closes.
func (b *browsers) read(c *websocket.Conn, chat string) {
	for {
		var f Frame
		if err := wsjson.Read(context.Background(), c, &f); err != nil {
			return
		}
		if f.Type != "message" && f.Type != "edit" {
			continue
		}
		b.mu.Lock()
		b.sent = append(b.sent, channeltest.Sent{ChatID: chat, MessageID: f.ID, Edit: f.Type == "edit", Text: f.Text, At: time.Now()})
		b.mu.Unlock()
	}
}

func (b *browsers) write(user string, typ websocket.MessageType, data []byte) {
	c := b.conn(user)
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, typ, data); err != nil {
		b.t.Errorf("write: %v", err)
	}
}

// sync returns once every tab has recorded the frames the gateway wrote
// so far: a ping's pong comes after them on the socket, and the reader
// handles it only after recording them.
func (b *browsers) sync() {
	b.mu.Lock()
	conns := make([]*websocket.Conn, 0, len(b.conns))
	for _, c := range b.conns {
		conns = append(conns, c)
	}
	b.mu.Unlock()
	for _, c := range conns {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = c.Ping(ctx) // a closed tab has nothing more to record
		cancel()
	}
}

func (b *browsers) drop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for u, c := range b.conns {
		c.CloseNow()
		delete(b.conns, u)
	}
}

func TestConformance(t *testing.T) {
	channeltest.Run(t, channeltest.Harness{
		Skip: map[string]string{
			channeltest.CheckInboundGroup: "the web chat has no group chats",
		},
		Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
			ch, err := New(DefaultConfig(), Options{TokenFile: testTokenFile(t), Log: env.Log})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(ch.Handler())
			b := &browsers{t: t, url: "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws", token: ch.Token(), conns: map[string]*websocket.Conn{}}
			t.Cleanup(func() { b.drop(); srv.Close() })
			return channeltest.Fixture{
				Channel:  ch,
				SenderID: chatOf,
				Emit: func(m channeltest.Message) channeltest.Emitted {
					b.mu.Lock()
					b.n++
					id := fmt.Sprintf("msg%d", b.n)
					b.mu.Unlock()
					data := fmt.Appendf(nil, `{"type":"message","id":%q,"text":%q}`, id, m.Text)
					b.write(m.From, websocket.MessageText, data)
					return channeltest.Emitted{ChatID: chatOf(m.From), MessageID: "c-" + id}
				},
				EmitMalformed: func() {
					b.write(channeltest.Alice, websocket.MessageText, []byte(`{"type":"message","text":`))
				},
				Drop: b.drop,
				Sent: func() []channeltest.Sent {
					b.sync()
					b.mu.Lock()
					defer b.mu.Unlock()
					return slices.Clone(b.sent)
				},
				// Acked is nil: the web chat has no acknowledgement; the
				// browser keeps what it sent on screen either way.
			}
		},
	})
}
