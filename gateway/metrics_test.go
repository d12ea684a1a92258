package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/relay"
)

// stagedChannel connects when told to, then fails for good when told to,
// reporting its state through a channels.Loop like every adapter.
type stagedChannel struct {
	health  channels.HealthState
	connect chan struct{}
	fail    chan struct{}
}

func (s *stagedChannel) Name() string            { return "staged" }
func (s *stagedChannel) Health() channels.Health { return s.health.Get() }
func (s *stagedChannel) Send(context.Context, bus.Outbound) (channels.MessageRef, error) {
	return channels.MessageRef{}, nil
}
func (s *stagedChannel) Run(ctx context.Context, _ channels.Inbox) error {
	l := &channels.Loop{Name: "staged", Health: &s.health}
	return l.Run(ctx, func(ctx context.Context, up func()) error {
		select {
		case <-s.connect:
			up()
		case <-ctx.Done():
			return nil
		}
		select {
		case <-s.fail:
			return channels.Fatal(errors.New("staged: token rejected"))
		case <-ctx.Done():
			return nil
		}
	})
}

func TestChannelMetricsFollowManagerHealth(t *testing.T) {
	m := NewMetrics(nil)
	ch := &stagedChannel{connect: make(chan struct{}), fail: make(chan struct{})}
	mgr := relay.NewManager(relay.ManagerConfig{}, []channels.Channel{ch})
	m.WatchChannels(mgr.Health)
	srv := httptest.NewServer(promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = mgr.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	scrape := func() string {
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	want := func(state channels.State) {
		t.Helper()
		line := `nanobot_channel_up{channel="staged",state="` + string(state) + `"} 1`
		deadline := time.Now().Add(5 * time.Second)
		for {
			body := scrape()
			if strings.Contains(body, line) {
				if got := mgr.Health()["staged"].State; got != state {
					t.Errorf("/metrics says %s, Manager health says %s", state, got)
				}
				if n := strings.Count(body, `nanobot_channel_up{channel="staged"`); n != len(channels.States) {
					t.Errorf("%d nanobot_channel_up series, want one per state (%d)", n, len(channels.States))
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("/metrics never showed %s:\n%s", line, grep(body, "nanobot_channel"))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	want(channels.StateConnecting)
	close(ch.connect)
	want(channels.StateConnected)
	close(ch.fail)
	want(channels.StateFailed)
	if h := mgr.Health()["staged"]; h.LastError != "staged: token rejected" {
		t.Errorf("failed health %+v lacks the reason", h)
	}
}
