package web

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

func dialTemp(t *testing.T, c *Channel, url, chat string, temporary bool) (*websocket.Conn, Frame) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	if err := wsjson.Write(ctx, ws, Frame{Type: "auth", Chat: chat, Token: c.Token(), Temporary: temporary}); err != nil {
		t.Fatal(err)
	}
	var f Frame
	if err := wsjson.Read(ctx, ws, &f); err != nil {
		t.Fatal(err)
	}
	return ws, f
}

// TestTemporaryChat: a temporary tab's messages reach the agent as
// Ephemeral turns that carry the conversation so far (its own messages and
// the final replies, a streamed reply once), commands that would touch a
// session are refused, and the conversation is gone with the last tab.
func TestTemporaryChat(t *testing.T) {
	c, srv, in := start(t, DefaultConfig(), Options{})
	ctx := context.Background()
	ws, hello := dialTemp(t, c, srv.URL, "temporary-tab-1", true)
	if hello.Type != "hello" || !hello.Temporary {
		t.Fatalf("hello = %+v, want a temporary hello", hello)
	}

	_ = wsjson.Write(ctx, ws, Frame{Type: "message", Text: "first question"})
	waitfor.Within(t, "the first message", 5*time.Second, func() bool { return in.len() == 1 })
	// The reply streams: a message, then edits, the last one final.
	ref, err := c.Send(ctx, bus.Outbound{ChatID: "temporary-tab-1", Content: "first"})
	if err != nil {
		t.Fatal(err)
	}
	_ = read(t, ws)
	for _, e := range []bus.Outbound{{Content: "first answer"}, {Content: "first answer.", Final: true}} {
		if err := c.Edit(ctx, ref, e); err != nil {
			t.Fatal(err)
		}
		_ = read(t, ws)
	}
	_ = wsjson.Write(ctx, ws, Frame{Type: "message", Text: "second question"})
	waitfor.Within(t, "the second message", 5*time.Second, func() bool { return in.len() == 2 })

	in.mu.Lock()
	first, second := in.got[0], in.got[1]
	in.mu.Unlock()
	if !first.Ephemeral || len(first.History) != 0 {
		t.Errorf("first message: ephemeral %v, history %v; want ephemeral with no history", first.Ephemeral, first.History)
	}
	want := []bus.Turn{{Role: "user", Content: "first question"}, {Role: "assistant", Content: "first answer."}}
	if !second.Ephemeral || !cmp.Equal(second.History, want) {
		t.Errorf("second message: ephemeral %v, history diff (-got +want):\n%s", second.Ephemeral, cmp.Diff(second.History, want))
	}

	// /new would archive a stored session: refused, nothing delivered.
	_ = wsjson.Write(ctx, ws, Frame{Type: "message", Text: "/new"})
	if f := read(t, ws); f.Type != "error" || !strings.Contains(f.Text, "temporary chat") {
		t.Errorf("/new in a temporary chat: %+v, want an error", f)
	}
	// /stop passes (it stores nothing), as a command, not an ephemeral turn.
	_ = wsjson.Write(ctx, ws, Frame{Type: "message", Text: "/stop"})
	waitfor.Within(t, "/stop", 5*time.Second, func() bool { return in.len() == 3 })
	in.mu.Lock()
	stop := in.got[2]
	in.mu.Unlock()
	if stop.Content != "/stop" || stop.Ephemeral {
		t.Errorf("/stop delivered as %+v", stop)
	}

	// The same id may not be opened as a stored chat meanwhile.
	_, f := dialTemp(t, c, srv.URL, "temporary-tab-1", false)
	if f.Type != "error" {
		t.Errorf("a stored tab on a temporary chat's id: %+v, want an error", f)
	}

	// The last tab closes: the conversation is forgotten.
	ws.Close(websocket.StatusNormalClosure, "")
	waitfor.Within(t, "the temporary chat forgotten", 5*time.Second, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.temps) == 0 && len(c.conns) == 0
	})
}

// TestStoredChatIsNotEphemeral: an ordinary tab's messages are stored
// turns, whatever it said before.
func TestStoredChatIsNotEphemeral(t *testing.T) {
	c, srv, in := start(t, DefaultConfig(), Options{})
	ws, hello := dialTemp(t, c, srv.URL, "stored-tab-1", false)
	if hello.Temporary {
		t.Fatalf("hello = %+v", hello)
	}
	_ = wsjson.Write(context.Background(), ws, Frame{Type: "message", Text: "/new"})
	waitfor.Within(t, "the message", 5*time.Second, func() bool { return in.len() == 1 })
	if m := in.got[0]; m.Ephemeral || m.History != nil || m.Content != "/new" {
		t.Errorf("stored chat delivered %+v", m)
	}
}

// TestSignedInBrowserChatsWithoutToken: a WebSocket whose
// handshake the login check accepts is admitted without the token (as an
// admin); one it refuses still needs the token.
func TestSignedInBrowserChatsWithoutToken(t *testing.T) {
	c, srv, in := start(t, DefaultConfig(), Options{})
	c.SetLogin(func(r *http.Request) bool {
		ck, err := r.Cookie("session")
		return err == nil && ck.Value == "good"
	})
	dialCookie := func(chat, cookie string) (*websocket.Conn, Frame) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws",
			&websocket.DialOptions{HTTPHeader: http.Header{"Cookie": {"session=" + cookie}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.CloseNow() })
		_ = wsjson.Write(ctx, ws, Frame{Type: "auth", Chat: chat})
		var f Frame
		if err := wsjson.Read(ctx, ws, &f); err != nil {
			t.Fatal(err)
		}
		return ws, f
	}
	if _, f := dialCookie("signed-out-tab", "stale"); f.Type != "error" || !strings.Contains(f.Text, "token") {
		t.Errorf("a tab without a login: %+v, want the token error", f)
	}
	ws, f := dialCookie("signed-in-tab", "good")
	if f.Type != "hello" {
		t.Fatalf("a signed-in tab: %+v, want hello", f)
	}
	_ = wsjson.Write(context.Background(), ws, Frame{Type: "message", Text: "hello from afar"})
	waitfor.Within(t, "the message", 5*time.Second, func() bool { return in.len() == 1 })
	if m := in.got[0]; m.Content != "hello from afar" || !m.Admin {
		t.Errorf("delivered %+v, want the message as admin", m)
	}
}
