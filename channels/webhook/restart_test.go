package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/webhook"
	"github.com/nanobot-go/nanobot/channels/webhook/webhooktest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// gateway runs one webhook channel over an instance's state folder the way
// the gateway does; stop takes it down (a restart is stop, then another
// gateway over the same folder).
func gateway(t *testing.T, state string, hooks map[string]webhook.Hook, in channels.Inbox) (url string, stop func()) {
	t.Helper()
	cfg := webhook.DefaultConfig()
	cfg.Enabled, cfg.Hooks = true, hooks
	ch, err := webhook.New(cfg, channels.Deps{Paths: configs.Paths{State: state}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle(ch.WebhookPath(), ch.WebhookHandler())
	srv := httptest.NewServer(mux)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, in) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			srv.Close()
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	waitfor.True(t, "the channel to run", func() bool { return ch.Health().State == channels.StateConnected })
	return srv.URL, stop
}

// TestReplayRefusedAcrossRestart: a signed request captured and sent again
// after a gateway restart, within the window, is still a replay, and so is
// a freshly signed one reusing its id; new requests are taken as before.
// The state file holds neither signatures nor ids, and only the owner may
// read it.
func TestReplayRefusedAcrossRestart(t *testing.T) {
	state := t.TempDir()
	hooks := map[string]webhook.Hook{"ha": {Secret: secret, ReplyURL: "http://127.0.0.1:1/reply"}}
	in := &inbox{}
	url, stop := gateway(t, state, hooks, in)
	c := &webhooktest.Caller{URL: url + "/hooks/ha", Secret: secret}
	body := []byte(`{"chatId":"kitchen","senderId":"ann","text":"open the garage","id":"evt-7"}`)
	now := time.Now().Unix()
	ts, sig := strconv.FormatInt(now, 10), webhook.Sign(secret, now, body)
	if res := c.PostRaw(t, body, ts, sig); res.Status != http.StatusAccepted {
		t.Fatalf("genuine request: %d %s", res.Status, res.Raw)
	}

	stop()
	url, _ = gateway(t, state, hooks, in)
	c.URL = url + "/hooks/ha"
	if res := c.PostRaw(t, body, ts, sig); res.Status != http.StatusConflict {
		t.Errorf("the captured request after a restart: %d %s, want 409", res.Status, res.Raw)
	}
	later := now + 1 // another timestamp: another signature, the same id
	if res := c.PostRaw(t, body, strconv.FormatInt(later, 10), webhook.Sign(secret, later, body)); res.Status != http.StatusConflict {
		t.Errorf("its id, freshly signed, after a restart: %d %s, want 409", res.Status, res.Raw)
	}
	if res := c.Post(t, webhook.Request{ChatID: "kitchen", SenderID: "ann", Text: "close it", ID: "evt-8"}); res.Status != http.StatusAccepted {
		t.Errorf("a new request after a restart: %d %s, want 202", res.Status, res.Raw)
	}
	var ids []string
	for _, m := range in.all() {
		ids = append(ids, m.MessageID)
	}
	if strings.Join(ids, " ") != "ha:evt-7 ha:evt-8" {
		t.Fatalf("inbox got %q, want evt-7 and evt-8 once each", ids)
	}

	files, err := os.ReadDir(state)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 {
		t.Fatalf("state folder holds %v, want the replay file alone", files)
	}
	fi, _ := files[0].Info()
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want 0600", fi.Name(), fi.Mode().Perm())
	}
	b, err := os.ReadFile(state + "/" + fi.Name())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{strings.TrimPrefix(sig, "sha256="), "evt-7", "evt-8"} {
		if strings.Contains(string(b), s) {
			t.Errorf("%s holds %q in the clear: %q", fi.Name(), s, b)
		}
	}
}

// failOnce refuses the first message (the journal could not take it) and
// records the others.
type failOnce struct {
	mu     sync.Mutex
	failed bool
	got    []bus.Inbound
}

func (f *failOnce) Deliver(_ context.Context, m bus.Inbound) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.failed {
		f.failed = true
		return errors.New("journal: disk full")
	}
	f.got = append(f.got, m)
	return nil
}

// TestRequestNotTakenMaySendAgain: a request answered 503 because the
// gateway could not take it was not acknowledged, so the very same bytes
// (signature and id) are taken when sent again; once taken, they are a
// replay, after a restart too.
func TestRequestNotTakenMaySendAgain(t *testing.T) {
	state := t.TempDir()
	hooks := map[string]webhook.Hook{"ha": {Secret: secret, ReplyURL: "http://127.0.0.1:1/reply"}}
	in := &failOnce{}
	url, stop := gateway(t, state, hooks, in)
	c := &webhooktest.Caller{URL: url + "/hooks/ha", Secret: secret}
	body := []byte(`{"chatId":"kitchen","senderId":"ann","text":"lights off","id":"evt-1"}`)
	now := time.Now().Unix()
	ts, sig := strconv.FormatInt(now, 10), webhook.Sign(secret, now, body)
	if res := c.PostRaw(t, body, ts, sig); res.Status != http.StatusServiceUnavailable {
		t.Fatalf("a request the gateway cannot take: %d %s, want 503", res.Status, res.Raw)
	}
	if res := c.PostRaw(t, body, ts, sig); res.Status != http.StatusAccepted {
		t.Fatalf("the same request sent again: %d %s, want 202", res.Status, res.Raw)
	}
	stop()
	url, _ = gateway(t, state, hooks, in)
	c.URL = url + "/hooks/ha"
	if res := c.PostRaw(t, body, ts, sig); res.Status != http.StatusConflict {
		t.Errorf("and once more after a restart, now that it was taken: %d %s, want 409", res.Status, res.Raw)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.got) != 1 || in.got[0].MessageID != "ha:evt-1" {
		t.Fatalf("inbox got %+v, want evt-1 once", in.got)
	}
}

// TestUnreadableReplayFileStopsRun: without its replay memory the channel
// would take replays, so Run fails (the runtime restarts it with backoff
// and shows the error) and requests get 503 meanwhile.
func TestUnreadableReplayFileStopsRun(t *testing.T) {
	state := t.TempDir()
	if err := os.Mkdir(state+"/"+webhook.ReplayFileName, 0o700); err != nil { // not a file, even for root
		t.Fatal(err)
	}
	cfg := webhook.DefaultConfig()
	cfg.Enabled, cfg.Hooks = true, map[string]webhook.Hook{"ha": {Secret: secret, ReplyURL: "http://127.0.0.1:1/reply"}}
	ch, err := webhook.New(cfg, channels.Deps{Paths: configs.Paths{State: state}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitfor.Timeout) // a Run that starts fails the test, not hangs it
	defer cancel()
	if err := ch.Run(ctx, &inbox{}); err == nil || !strings.Contains(err.Error(), "replay") {
		t.Fatalf("Run over an unreadable replay file: %v, want an error naming the replay memory", err)
	}
	srv := httptest.NewServer(ch.WebhookHandler())
	defer srv.Close()
	c := &webhooktest.Caller{URL: srv.URL + "/hooks/ha", Secret: secret}
	if res := c.Post(t, webhook.Request{ChatID: "c", SenderID: "ann", Text: "hi"}); res.Status != http.StatusServiceUnavailable {
		t.Errorf("request while Run failed: %d %s, want 503", res.Status, res.Raw)
	}
}
