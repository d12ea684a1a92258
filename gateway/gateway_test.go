package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/web"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/natsbus/natstest"
	"github.com/nanobot-go/nanobot/gateway/relay"
	"github.com/nanobot-go/nanobot/internal/owner"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
)

// fakeChannel is a platform: tests push inbound messages, it records sends
// and edits. failRuns makes its first Run calls fail.
type fakeChannel struct {
	name     string
	in       chan bus.Inbound
	failRuns atomic.Int32
	runs     atomic.Int32
	// up is set while Run is past the point where a failing run fails: like
	// a real adapter, the fake reports connecting until then.
	up       atomic.Bool
	interval time.Duration // edit interval; 0 means 10 ms
	// redeliver makes Run retry a message the gateway did not accept (a
	// platform redelivering what was not acknowledged), first when Run ends
	// before it was accepted: it goes to front, read before in.
	redeliver bool
	front     chan bus.Inbound

	mu      sync.Mutex
	sent    []bus.Outbound
	edits   []bus.Outbound
	denied  []bus.Inbound
	nextRef int
	shown   map[string]string   // ref -> current text
	order   map[string][]string // chat -> refs in order
}

func newFake(name string) *fakeChannel {
	return &fakeChannel{name: name, in: make(chan bus.Inbound, 16), shown: map[string]string{}, order: map[string][]string{}}
}

func (f *fakeChannel) Name() string { return f.name }

// Health reports connecting until Run has got past its failures.
func (f *fakeChannel) Health() channels.Health {
	if f.up.Load() {
		return channels.Health{State: channels.StateConnected}
	}
	return channels.Health{State: channels.StateConnecting}
}
func (f *fakeChannel) Run(ctx context.Context, inbox channels.Inbox) error {
	f.runs.Add(1)
	if f.failRuns.Load() > 0 {
		f.failRuns.Add(-1)
		return errors.New("platform unreachable")
	}
	f.up.Store(true)
	defer f.up.Store(false)
	for {
		var m bus.Inbound
		select {
		case m = <-f.front: // nil channel unless redelivering
		default:
			select {
			case <-ctx.Done():
				return nil
			case m = <-f.front:
			case m = <-f.in:
			}
		}
		err := inbox.Deliver(ctx, m)
		for f.redeliver && err != nil && !errors.Is(err, channels.ErrDenied) && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
			err = inbox.Deliver(ctx, m)
		}
		if f.redeliver && err != nil && ctx.Err() != nil {
			f.front <- m // not acknowledged: the platform offers it again, first
			return nil
		}
		if errors.Is(err, channels.ErrDenied) {
			f.mu.Lock()
			f.denied = append(f.denied, m)
			f.mu.Unlock()
		}
	}
}

func (f *fakeChannel) Send(_ context.Context, m bus.Outbound) (channels.MessageRef, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextRef++
	f.sent = append(f.sent, m)
	ref := fmt.Sprint(f.nextRef)
	f.shown[ref] = m.Content
	f.order[m.ChatID] = append(f.order[m.ChatID], ref)
	return channels.MessageRef{ChatID: m.ChatID, MessageID: ref}, nil
}
func (f *fakeChannel) Edit(_ context.Context, ref channels.MessageRef, m bus.Outbound) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.edits = append(f.edits, m)
	f.shown[ref.MessageID] = m.Content
	return nil
}
func (f *fakeChannel) EditInterval() time.Duration {
	if f.interval > 0 {
		return f.interval
	}
	return 10 * time.Millisecond
}
func (f *fakeChannel) MessageLimit() int { return 200 }

// texts returns what each platform message of a chat shows now, in order.
func (f *fakeChannel) texts(chat string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, ref := range f.order[chat] {
		out = append(out, f.shown[ref])
	}
	return out
}

// echoLLM answers "echo: <user text>", streaming word by word; a text
// starting with "long" gets a long reply. pause spaces the stream's deltas.
type echoLLM struct {
	calls atomic.Int32
	pause time.Duration
}

func (e *echoLLM) Chat(ctx context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	e.calls.Add(1)
	u := req.Messages[len(req.Messages)-1].Text()
	body := u[strings.LastIndex(u, "\n")+1:]
	reply := "echo: " + body
	if strings.HasPrefix(body, "long") {
		reply = strings.Repeat("All work and no play makes a dull bot. ", 20)
	}
	return &providers.LLMResponse{Content: reply, FinishReason: "stop"}, nil
}

func (e *echoLLM) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	r, err := e.Chat(ctx, req)
	if err != nil {
		return nil, err
	}
	for _, w := range strings.SplitAfter(r.Content, " ") {
		onDelta(providers.Delta{Content: w})
		if e.pause > 0 {
			select {
			case <-time.After(e.pause):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	return r, nil
}

// natsURL maps a test running in NATS mode to its server.
var natsURL sync.Map

// forEachBus runs a gateway test twice: on the in-memory bus with files
// (the default) and in cluster mode on an embedded NATS JetStream server.
func forEachBus(t *testing.T, test func(t *testing.T)) {
	t.Run("memory", test)
	t.Run("nats", func(t *testing.T) {
		srv := natstest.Start(t)
		natsURL.Store(t, srv.URL())
		t.Cleanup(func() { natsURL.Delete(t) })
		test(t)
	})
}

type running struct {
	addr   string
	cancel context.CancelFunc
	done   chan error
	dir    string
	state  string // the instance's state folder
}

// token is the instance's access token: the owner's credential (the web
// chat's token, an API key, a bearer key for the workbench's /api/).
func (r *running) token(t testing.TB) string {
	t.Helper()
	key, err := owner.Load(owner.Path(r.state))
	if err != nil {
		t.Fatal(err)
	}
	return key.Token()
}

// signInURL is the workbench's address with a one-time sign-in code, as
// the gateway prints it at start-up.
func (r *running) signInURL(t testing.TB) string {
	t.Helper()
	key, err := owner.Load(owner.Path(r.state))
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + r.addr + "/#login=" + key.LoginCode(time.Minute)
}

// authed adds the access token to a request, as a script of the owner's
// would.
func (r *running) authed(t testing.TB, req *http.Request) *http.Request {
	req.Header.Set("Authorization", "Bearer "+r.token(t))
	return req
}

func startGateway(t testing.TB, cfg configs.Config, llm providers.Provider, extra ...channels.Channel) *running {
	return startGatewayOpts(t, cfg, llm, nil, extra...)
}

func startGatewayOpts(t testing.TB, cfg configs.Config, llm providers.Provider, tweak func(*Options), extra ...channels.Channel) *running {
	t.Helper()
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	r := &running{cancel: cancel, done: make(chan error, 1), dir: dir}
	if url, ok := natsURL.Load(t); ok {
		cfg.Cluster.NATS.URL = url.(string)
		cfg.Cluster.LeaseTTLS, cfg.Cluster.AckWaitS = 1, 2
	}
	o := Options{
		Config: &cfg, Paths: configs.PathsFor(filepath.Join(dir, "config.json"), &cfg),
		Provider: llm, Model: "test", Extra: extra, Listener: ln,
		Ready: func(a string) { ready <- a }, DrainTimeout: 2 * time.Second, Stderr: io.Discard,
	}
	if tweak != nil {
		tweak(&o)
	}
	r.state = o.Paths.State
	go func() { r.done <- Run(ctx, o) }()
	select {
	case r.addr = <-ready:
	case err := <-r.done:
		t.Fatalf("gateway exited: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("gateway not ready")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("gateway: %v", err)
			}
		case <-time.After(15 * time.Second):
			var stacks strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
			t.Errorf("gateway did not stop; goroutines:\n%s", stacks.String())
		}
	})
	return r
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func testConfig(allow map[string][]any) configs.Config {
	cfg := configs.Default()
	cfg.Gateway.Heartbeat.Enabled = false
	for name, a := range allow {
		cfg.Channels.Platforms[name] = map[string]any{"enabled": true, "allowFrom": a}
	}
	return cfg
}

func TestMessageInReplyOutStreamed(t *testing.T) { forEachBus(t, testMessageInReplyOutStreamed) }

func testMessageInReplyOutStreamed(t *testing.T) {
	fc := newFake("fake")
	// Deltas slower than the first-message hold (half the 10 ms edit
	// interval), as from a real model.
	startGateway(t, testConfig(map[string][]any{"fake": {"*"}}), &echoLLM{pause: 20 * time.Millisecond}, fc)
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c1", SenderID: "u1", Content: "hello world", MessageID: "1"}
	waitfor.True(t, "reply", func() bool {
		got := fc.texts("c1")
		return len(got) == 1 && got[0] == "echo: hello world"
	})
	fc.mu.Lock()
	edits := len(fc.edits)
	fc.mu.Unlock()
	if edits == 0 {
		t.Error("reply was not streamed as edits")
	}
}

func TestQuickReplyIsOneMessage(t *testing.T) { forEachBus(t, testQuickReplyIsOneMessage) }

func testQuickReplyIsOneMessage(t *testing.T) {
	fc := newFake("fake")
	fc.interval = 2 * time.Second // the first message is held up to 500 ms
	startGateway(t, testConfig(map[string][]any{"fake": {"*"}}), &echoLLM{}, fc)
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c1", SenderID: "u1", Content: "hi there", MessageID: "1"}
	waitfor.True(t, "reply", func() bool {
		got := fc.texts("c1")
		return len(got) == 1 && got[0] == "echo: hi there"
	})
	fc.mu.Lock()
	edits := len(fc.edits)
	fc.mu.Unlock()
	if edits != 0 {
		t.Errorf("a reply that streamed faster than the first-message hold was edited %d times, want one send", edits)
	}
}

func TestLongReplySplit(t *testing.T) { forEachBus(t, testLongReplySplit) }

func testLongReplySplit(t *testing.T) {
	fc := newFake("fake")
	startGateway(t, testConfig(map[string][]any{"fake": {"*"}}), &echoLLM{}, fc)
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c", SenderID: "u", Content: "long please", MessageID: "1"}
	want := strings.TrimSpace(strings.Repeat("All work and no play makes a dull bot. ", 20))
	waitfor.True(t, "split reply", func() bool {
		got := strings.Join(fc.texts("c"), " ")
		return strings.Join(strings.Fields(got), " ") == want
	})
	for _, s := range fc.texts("c") {
		if len([]rune(s)) > 200 {
			t.Errorf("message of %d characters over the limit", len([]rune(s)))
		}
	}
	if len(fc.texts("c")) < 3 {
		t.Errorf("want the reply over several messages, got %d", len(fc.texts("c")))
	}
}

func TestAllowListAndPairing(t *testing.T) { forEachBus(t, testAllowListAndPairing) }

func testAllowListAndPairing(t *testing.T) {
	fc := newFake("fake")
	llm := &echoLLM{}
	r := startGateway(t, testConfig(map[string][]any{"fake": {"owner"}}), llm, fc)
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "grp", SenderID: "stranger", Content: "hi", MessageID: "1", IsGroup: true}
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "dm", SenderID: "stranger", Content: "hi", MessageID: "2"}
	waitfor.True(t, "pairing code", func() bool { return len(fc.texts("dm")) == 1 })
	if len(fc.texts("grp")) != 0 || llm.calls.Load() != 0 {
		t.Fatal("stranger reached the agent")
	}
	code := strings.Fields(strings.SplitAfter(fc.texts("dm")[0], "pairing code is ")[1])[0]
	store := relay.NewPairingStore(filepath.Join(r.dir, "state", "pairing.json"))
	if _, err := store.Approve(code); err != nil {
		t.Fatal(err)
	}
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "dm", SenderID: "stranger", Content: "now?", MessageID: "3"}
	waitfor.True(t, "approved sender answered", func() bool {
		got := fc.texts("dm")
		return len(got) == 2 && got[1] == "echo: now?"
	})
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "o", SenderID: "owner", Content: "yo", MessageID: "4"}
	waitfor.True(t, "owner answered", func() bool { return len(fc.texts("o")) == 1 })
}

func TestDeniedByDefault(t *testing.T) { forEachBus(t, testDeniedByDefault) }

func testDeniedByDefault(t *testing.T) {
	fc := newFake("fake")
	llm := &echoLLM{}
	startGateway(t, testConfig(map[string][]any{"fake": {}}), llm, fc)
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "g", SenderID: "x", Content: "hi", MessageID: "1", IsGroup: true}
	waitfor.True(t, "denied", func() bool { fc.mu.Lock(); defer fc.mu.Unlock(); return len(fc.denied) == 1 })
	if llm.calls.Load() != 0 {
		t.Error("empty allowFrom let a message through")
	}
}

func TestChannelFailureVisibleThenRecovers(t *testing.T) {
	forEachBus(t, testChannelFailureVisibleThenRecovers)
}

func testChannelFailureVisibleThenRecovers(t *testing.T) {
	fc := newFake("fake")
	fc.failRuns.Store(2)
	cfg := testConfig(map[string][]any{"fake": {"*"}})
	r := startGateway(t, cfg, &echoLLM{}, fc)
	// While failing, /readyz says so; the manager restarts it (1 s, 2 s backoff).
	code, body := get(t, "http://"+r.addr+"/readyz")
	if code == 200 {
		if fc.runs.Load() < 3 {
			t.Errorf("ready while the channel fails: %s", body)
		}
	} else if !strings.Contains(body, "fake") {
		t.Errorf("readyz body %q does not name the channel", body)
	}
	waitfor.True(t, "channel recovered", func() bool {
		c, _ := get(t, "http://"+r.addr+"/readyz")
		return c == 200
	})
	if fc.runs.Load() != 3 {
		t.Errorf("runs %d, want 3", fc.runs.Load())
	}
	_, metrics := get(t, "http://"+r.addr+"/metrics")
	if !strings.Contains(metrics, `nanobot_channel_restarts{channel="fake"} 2`) {
		t.Errorf("metrics lack the restarts:\n%s", grep(metrics, "nanobot_channel"))
	}
	_, status := get(t, "http://"+r.addr+"/api/status")
	if !strings.Contains(status, `"fake":{"state":"connected"`) {
		t.Errorf("status %s", status)
	}
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestHealthAndWebUI(t *testing.T) { forEachBus(t, testHealthAndWebUI) }

func testHealthAndWebUI(t *testing.T) {
	r := startGatewayOpts(t, testConfig(nil), &echoLLM{}, func(o *Options) { o.Channels = webOnly() })
	if code, body := get(t, "http://"+r.addr+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("healthz %d %q", code, body)
	}
	if code, body := get(t, "http://"+r.addr+"/"); code != 200 || !strings.Contains(body, "nanobot") {
		t.Errorf("web UI %d", code)
	}
	// In cluster mode the channels start once the instance holds the
	// channels lease, a moment after the HTTP server.
	waitfor.True(t, "ready with only the web chat", func() bool {
		code, _ := get(t, "http://"+r.addr+"/readyz")
		return code == 200
	})
}

func TestReloadUpdatesAllowLists(t *testing.T) { forEachBus(t, testReloadUpdatesAllowLists) }

func testReloadUpdatesAllowLists(t *testing.T) {
	fc := newFake("fake")
	reload := make(chan struct{})
	next := testConfig(map[string][]any{"fake": {"newcomer"}})
	startGatewayOpts(t, testConfig(map[string][]any{"fake": {}}), &echoLLM{}, func(o *Options) {
		o.Reload = reload
		o.ReloadConfig = func() (*configs.Config, error) { return &next, nil }
	}, fc)
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "g", SenderID: "newcomer", Content: "hi", MessageID: "1", IsGroup: true}
	waitfor.True(t, "denied before reload", func() bool { fc.mu.Lock(); defer fc.mu.Unlock(); return len(fc.denied) == 1 })
	reload <- struct{}{}
	waitfor.True(t, "admitted after reload", func() bool {
		fc.in <- bus.Inbound{Channel: "fake", ChatID: "g", SenderID: "newcomer", Content: "again", MessageID: fmt.Sprint(time.Now().UnixNano()), IsGroup: true}
		time.Sleep(20 * time.Millisecond)
		return len(fc.texts("g")) > 0
	})
}

// webOnly is a channel registry with the web chat, as cmd registers it.
func webOnly() *channels.Registry {
	r := channels.NewRegistry()
	if err := r.Register("web", web.Factory()); err != nil {
		panic(err)
	}
	return r
}
