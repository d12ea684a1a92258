package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/relay"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

type inbox struct {
	mu  sync.Mutex
	got []bus.Inbound
}

func (i *inbox) Deliver(_ context.Context, m bus.Inbound) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.got = append(i.got, m)
	return nil
}

func (i *inbox) len() int { i.mu.Lock(); defer i.mu.Unlock(); return len(i.got) }

// testTokenFile is where a test channel keeps its access token.
func testTokenFile(t *testing.T) string { return filepath.Join(t.TempDir(), "web_token") }

func start(t *testing.T, cfg Config, o Options) (*Channel, *httptest.Server, *inbox) {
	t.Helper()
	if o.TokenFile == "" {
		o.TokenFile = testTokenFile(t)
	}
	c, err := New(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	in := &inbox{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Run(ctx, in); close(done) }()
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(func() { cancel(); <-done; srv.Close() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		ready := c.inbox != nil
		c.mu.Unlock()
		if ready || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	return c, srv, in
}

func dial(t *testing.T, srv *httptest.Server, chat, token string) (*websocket.Conn, Frame) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	if err := wsjson.Write(ctx, ws, Frame{Type: "auth", Chat: chat, Token: token}); err != nil {
		t.Fatal(err)
	}
	var f Frame
	if err := wsjson.Read(ctx, ws, &f); err != nil {
		t.Fatal(err)
	}
	return ws, f
}

func read(t *testing.T, ws *websocket.Conn) Frame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var f Frame
	if err := wsjson.Read(ctx, ws, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestChatRoundTrip(t *testing.T) {
	c, srv, in := start(t, DefaultConfig(), Options{})
	ws, hello := dial(t, srv, "browser-tab-1", c.Token())
	if hello.Type != "hello" || hello.Chat != "browser-tab-1" {
		t.Fatalf("hello = %+v", hello)
	}
	ctx := context.Background()
	_ = wsjson.Write(ctx, ws, Frame{Type: "bogus"}) // ignored
	_ = wsjson.Write(ctx, ws, Frame{Type: "message", Text: "hi bot"})
	waitfor.Within(t, "the message delivered", 5*time.Second, func() bool { return in.len() > 0 })
	if in.len() != 1 || in.got[0].Content != "hi bot" || in.got[0].ChatID != "browser-tab-1" || in.got[0].Channel != "web" {
		t.Fatalf("inbound = %+v", in.got)
	}

	ref, err := c.Send(ctx, bus.Outbound{ChatID: "browser-tab-1", Content: "Hel"})
	if err != nil {
		t.Fatal(err)
	}
	if f := read(t, ws); f.Type != "message" || f.Text != "Hel" || f.ID != ref.MessageID {
		t.Errorf("message frame = %+v", f)
	}
	if err := c.Edit(ctx, ref, bus.Outbound{Content: "Hello!", Final: true}); err != nil {
		t.Fatal(err)
	}
	if f := read(t, ws); f.Type != "edit" || f.Text != "Hello!" || f.ID != ref.MessageID || !f.Final {
		t.Errorf("edit frame = %+v", f)
	}
	// No tab open for a chat: nothing to deliver to, and no failure (the
	// conversation keeps the answer); neither a retry loop nor an error.
	if _, err = c.Send(ctx, bus.Outbound{ChatID: "nobody-here"}); err != nil {
		t.Errorf("send to closed chat: %v", err)
	}
}

// TestTokenRequiredOnLoopbackToo: a loopback peer is not the owner (the
// agent's own commands and other local users connect from there too):
// without the token, or with a wrong one, the socket is refused.
func TestTokenRequiredOnLoopbackToo(t *testing.T) {
	tokenFile := testTokenFile(t)
	c, srv, in := start(t, DefaultConfig(), Options{TokenFile: tokenFile})
	if len(c.Token()) < 32 {
		t.Fatalf("token %q", c.Token())
	}
	for _, tok := range []string{"", "wrong", c.Token()[:len(c.Token())-1]} {
		ws, f := dial(t, srv, "tab-without-token", tok)
		if f.Type != "error" || !strings.Contains(f.Text, "token") {
			t.Errorf("token %q got %+v", tok, f)
		}
		_ = wsjson.Write(context.Background(), ws, Frame{Type: "message", Text: "let me in"})
	}
	ws, f := dial(t, srv, "tab-with-token", c.Token())
	if f.Type != "hello" {
		t.Errorf("right token got %+v", f)
	}
	_ = wsjson.Write(context.Background(), ws, Frame{Type: "message", Text: "owner here"})
	waitfor.Within(t, "the owner's message", 5*time.Second, func() bool { return in.len() == 1 })
	in.mu.Lock()
	got := in.got
	in.mu.Unlock()
	if len(got) != 1 || got[0].Content != "owner here" || !got[0].Admin {
		t.Errorf("delivered %+v, want only the owner's message, as admin", got)
	}
	// The token persists across restarts.
	c2, err := New(DefaultConfig(), Options{TokenFile: tokenFile})
	if err != nil || c2.Token() != c.Token() {
		t.Errorf("token not persisted: %v", err)
	}
}

func TestNewNeedsATokenFile(t *testing.T) {
	if _, err := New(DefaultConfig(), Options{}); err == nil {
		t.Fatal("a web chat without a token file was built")
	}
}

func TestCrossOriginRejected(t *testing.T) {
	_, srv, _ := start(t, DefaultConfig(), Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://evil.example"}}})
	if err == nil {
		t.Fatal("cross-origin websocket accepted")
	}
	if resp != nil && resp.StatusCode != http.StatusForbidden {
		t.Errorf("status %d, want 403", resp.StatusCode)
	}
}

func TestUIServed(t *testing.T) {
	_, srv, _ := start(t, DefaultConfig(), Options{})
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Errorf("index: %d %v", resp.StatusCode, resp.Header)
	}
}

// When the whole answer is on screen before its stream ends, the
// dispatcher makes no last edit; the page still learns that the answer is
// final (the workbench then shows the stored turn).
func TestStreamEndTellsThePageTheAnswerIsFinal(t *testing.T) {
	c, srv, _ := start(t, DefaultConfig(), Options{})
	ws, hello := dial(t, srv, "browser-tab-2", c.Token())
	out := make(chan bus.Outbound, 4)
	ctx, cancel := context.WithCancel(context.Background())
	d := relay.NewDispatcher(relay.DispatcherConfig{}, []channels.Channel{c})
	done := make(chan struct{})
	go func() { _ = d.Run(ctx, out); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	base := bus.Outbound{Channel: "web", ChatID: hello.Chat, StreamID: "s1"}
	delta := base
	delta.Kind, delta.Content = bus.KindDelta, "the whole answer"
	out <- delta
	f := read(t, ws)
	if f.Type != "message" || f.Text != "the whole answer" || f.Final {
		t.Fatalf("first frame = %+v, want the streamed text, not final", f)
	}
	end := base
	end.Kind, end.Content, end.Final = bus.KindStreamEnd, "the whole answer", true
	out <- end
	f = read(t, ws)
	if f.Type != "edit" || f.Text != "the whole answer" || !f.Final {
		t.Fatalf("frame after the stream's end = %+v, want the final edit", f)
	}
}

// watchedChannel is a loopback web chat served over HTTP, not running,
// and a channel that receives a value each time a message starts waiting
// for Run.
func watchedChannel(t *testing.T) (*Channel, *httptest.Server, <-chan struct{}) {
	t.Helper()
	waits := make(chan struct{}, 1)
	testHookWaitInbox = func() { waits <- struct{}{} }
	t.Cleanup(func() { testHookWaitInbox = nil })
	c, err := New(DefaultConfig(), Options{TokenFile: testTokenFile(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	return c, srv, waits
}

// TestMessageAfterRunEndedRefusedAtOnce: a tab that sends while the
// gateway stops (Run has returned) is told so at once; its handler does
// not wait startWait for a Run that is not coming.
func TestMessageAfterRunEndedRefusedAtOnce(t *testing.T) {
	c, srv, waited := watchedChannel(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Run(ctx, &inbox{}); close(done) }()
	waitfor.Within(t, "Run holds its inbox", 5*time.Second, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.inbox != nil
	})
	cancel()
	<-done
	ws, hello := dial(t, srv, "late-tab-0001", c.Token())
	if hello.Type != "hello" {
		t.Fatalf("hello = %+v", hello)
	}
	if err := wsjson.Write(context.Background(), ws, Frame{Type: "message", Text: "sent while stopping"}); err != nil {
		t.Fatal(err)
	}
	// read gives up after 5 s, half of startWait: a handler that waited
	// for Run would answer too late.
	if f := read(t, ws); f.Type != "error" || !strings.Contains(f.Text, "stopping") {
		t.Errorf("frame = %+v, want an error saying the gateway is stopping", f)
	}
	select {
	case <-waited:
		t.Error("the message waited for Run after Run had ended")
	default:
	}
}

// TestMessageBeforeRunWaitsForIt: a tab that reconnects the moment the
// gateway starts may send before the channel runs; its message is held
// until Run gives the channel its inbox, not refused.
func TestMessageBeforeRunWaitsForIt(t *testing.T) {
	c, srv, waiting := watchedChannel(t)
	ws, hello := dial(t, srv, "early-tab-0001", c.Token())
	if hello.Type != "hello" {
		t.Fatalf("hello = %+v", hello)
	}
	if err := wsjson.Write(context.Background(), ws, Frame{Type: "message", Text: "sent before Run"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waiting:
	case <-time.After(5 * time.Second):
		t.Fatal("the message did not wait for Run")
	}
	in := &inbox{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Run(ctx, in); close(done) }()
	t.Cleanup(func() { ws.CloseNow(); cancel(); <-done })
	waitfor.Within(t, "the early message delivered", 5*time.Second, func() bool { return in.len() == 1 })
	if got := in.got[0].Content; got != "sent before Run" {
		t.Errorf("delivered %q", got)
	}
}

// The start-up notice never shows the token: the terminal's way in is the
// workbench's sign-in link, and terminal output is often kept (a journal,
// docker logs).
func TestNoticeNeverShowsTheToken(t *testing.T) {
	c, err := New(DefaultConfig(), Options{TokenFile: testTokenFile(t)})
	if err != nil {
		t.Fatal(err)
	}
	if n := c.Notice("http://127.0.0.1:18790"); strings.Contains(n, c.Token()) {
		t.Errorf("notice %q shows the token", n)
	}
}
