package mochat

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/mochat/mochattest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// sioPath is not the default, so the test proves socketPath is used.
const sioPath = "/claw-socket"

func socketConfig(sio *mochattest.SocketIO) func(*Config) {
	return func(c *Config) { c.SocketURL, c.SocketPath = sio.URL, sioPath }
}

// seqOf is the sequence number of a fake message id ("msg-N").
func seqOf(id string) int64 {
	n, _ := strconv.ParseInt(strings.TrimPrefix(id, "msg-"), 10, 64)
	return n
}

// The shared conformance suite, receiving over a real Socket.IO server:
// nothing arrives by HTTP long poll, and a dropped socket (the server
// disconnects everyone while the HTTP API fails) is reconnected and
// resubscribed from the saved cursors.
func TestConformanceOverSocketIO(t *testing.T) {
	channeltest.Run(t, channeltest.Harness{Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
		f := newFake(t)
		noBadCalls(t, f)
		sio := mochattest.StartSocketIO(t, f, sioPath, mochattest.Token)
		ch := newChannel(t, f, env.Log, env.StateDir, socketConfig(sio))
		t.Cleanup(func() {
			if n := f.LongPolls(); n != 0 {
				t.Errorf("%d HTTP long polls in Socket.IO mode", n)
			}
		})
		// Messages are written once the channel is subscribed, so they
		// arrive by push (a message written before would be read by the
		// cold start over HTTP).
		subscribed := func() {
			waitfor.Within(t, "the Socket.IO subscriptions", 10*time.Second, func() bool {
				return sio.Seen("subscribe-sessions") > 0 && sio.Seen("subscribe-panels") > 0
			})
		}
		return channeltest.Fixture{
			Channel:  ch,
			SenderID: func(user string) string { return user },
			Emit: func(m channeltest.Message) channeltest.Emitted {
				subscribed()
				if m.Group {
					id := f.Post(lobby, mochattest.Message{From: m.From, Text: m.Text, Mentions: []string{mochattest.BotID}})
					return channeltest.Emitted{ChatID: panelPrefix + lobby, MessageID: id}
				}
				id := f.Say(userSession(m.From), mochattest.Message{From: m.From, Text: m.Text})
				return channeltest.Emitted{ChatID: userSession(m.From), MessageID: id}
			},
			EmitMalformed: func() {
				f.Say(userSession(channeltest.Alice), mochattest.Message{Payload: json.RawMessage(`"not a message"`)})
			},
			Drop: func() {
				f.Fail(500 * time.Millisecond)
				sio.DisconnectAll()
			},
			Sent: func() []channeltest.Sent {
				var out []channeltest.Sent
				for _, s := range f.Sent() {
					chat := s.Session
					if s.Panel != "" {
						chat = panelPrefix + s.Panel
					}
					out = append(out, channeltest.Sent{ChatID: chat, MessageID: s.MessageID, Text: s.Content, At: s.At})
				}
				return out
			},
			// Over Socket.IO the platform learns the cursor at the next
			// subscribe; what counts is the cursor the channel saved.
			Acked: func(e channeltest.Emitted) bool {
				if strings.HasPrefix(e.ChatID, panelPrefix) {
					return true
				}
				cur, ok := ch.state.get(e.ChatID)
				return ok && cur >= seqOf(e.MessageID)
			},
		}
	}})
}

// What arrives while the socket is down is handed over by the resubscribe
// (from the saved cursor), once, and the bot's history is not answered.
func TestSocketIOResubscribeDeliversMissedOnce(t *testing.T) {
	f := newFake(t)
	noBadCalls(t, f)
	sio := mochattest.StartSocketIO(t, f, sioPath, mochattest.Token)
	alice := userSession(channeltest.Alice)
	f.Say(alice, mochattest.Message{From: "alice", Text: "history", At: time.Now().Add(-time.Hour)})
	rec := &channeltest.Recorder{}
	ch := newChannel(t, f, nil, t.TempDir(), socketConfig(sio))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, rec) }()
	defer func() { cancel(); <-done }()
	waitfor.Within(t, "subscribed", 10*time.Second, func() bool { return sio.Seen("subscribe-sessions") == 1 })

	f.Say(alice, mochattest.Message{From: "alice", Text: "pushed one"})
	rec.Wait(t, "pushed one")

	// Drop the socket and write while the HTTP API is down too, so the
	// message can only come back through the resubscribe's answer.
	f.Fail(300 * time.Millisecond)
	sio.DisconnectAll()
	waitfor.Within(t, "the disconnect", 10*time.Second, func() bool { return sio.Seen("disconnect") >= 1 })
	f.Say(alice, mochattest.Message{From: "alice", Text: "while away"})
	waitfor.Within(t, "the resubscribe", 10*time.Second, func() bool { return sio.Seen("subscribe-sessions") >= 2 })
	rec.Wait(t, "while away")

	// A marker after everything: once it is in, nothing else may be.
	f.Say(alice, mochattest.Message{From: "alice", Text: "marker"})
	rec.Wait(t, "marker")
	var texts []string
	for _, m := range rec.All() {
		texts = append(texts, m.Content)
	}
	if strings.Join(texts, "|") != "pushed one|while away|marker" {
		t.Errorf("delivered %q, want each new message once and no history", texts)
	}
	if n := f.LongPolls(); n != 0 {
		t.Errorf("%d HTTP long polls", n)
	}
}

func TestSocketIOBadTokenIsFatal(t *testing.T) {
	f := newFake(t)
	sio := mochattest.StartSocketIO(t, f, sioPath, "another-token")
	ch := newChannel(t, f, nil, t.TempDir(), socketConfig(sio))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := ch.Run(ctx, &channeltest.Recorder{})
	if !channels.IsFatal(err) || !strings.Contains(err.Error(), "Socket.IO server rejected clawToken") || strings.Contains(err.Error(), mochattest.Token) {
		t.Fatalf("Run = %v, want a fatal rejection without the token", err)
	}
	if sio.Seen("refused") == 0 {
		t.Errorf("server did not refuse: %q", sio.Lines())
	}
}

// With nothing listening at socketUrl, messages still arrive by HTTP.
func TestSocketIOUnreachableFallsBackToHTTP(t *testing.T) {
	f := newFake(t)
	noBadCalls(t, f)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	rec := &channeltest.Recorder{}
	ch := newChannel(t, f, nil, t.TempDir(), func(c *Config) { c.SocketURL = dead })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, rec) }()
	defer func() { cancel(); <-done }()
	waitfor.Within(t, "connected", 10*time.Second, func() bool { return ch.Health().State == channels.StateConnected })
	f.Say(userSession(channeltest.Alice), mochattest.Message{From: "alice", Text: "by long poll"})
	rec.Wait(t, "by long poll")
	if f.LongPolls() == 0 {
		t.Error("no long poll: the message did not come by the fallback")
	}
}

func TestSIOURL(t *testing.T) {
	for _, tc := range []struct{ base, path, want, wantErr string }{
		{"https://mochat.io", "/socket.io", "wss://mochat.io/socket.io/?EIO=4&transport=websocket", ""},
		{"http://127.0.0.1:9/", "", "ws://127.0.0.1:9/socket.io/?EIO=4&transport=websocket", ""},
		{"wss://mochat.example", "socket.io/", "wss://mochat.example/socket.io/?EIO=4&transport=websocket", ""},
		{"ftp://x", "", "", "socketUrl"},
	} {
		got, err := sioURL(tc.base, tc.path)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("sioURL(%q) err = %v", tc.base, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("sioURL(%q, %q) = %q, %v; want %q", tc.base, tc.path, got, err, tc.want)
		}
	}
	if err := (Config{SocketURL: "nope://"}).Validate(); err == nil || !strings.Contains(err.Error(), "socketUrl") {
		t.Errorf("Validate: %v", err)
	}
}
