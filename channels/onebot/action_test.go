package onebot

import (
	"errors"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/kit"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// A failed action comes back as a *kit.APIError carrying the retcode, the
// type Send classifies refusals by.
func TestFailedActionIsAPIError(t *testing.T) {
	_, ch, _ := setup(t, false, nil, channels.Deps{}, nil)
	channeltest.Start(t, ch, &channeltest.Recorder{})
	waitfor.Within(t, "connected", 10*time.Second, func() bool { return ch.Health().State == channels.StateConnected })
	cn := ch.liveConn()
	if cn == nil {
		t.Fatal("connected, but no live connection")
	}
	_, err := cn.call(t.Context(), "no_such_action", nil, 5*time.Second)
	var ae *kit.APIError
	if !errors.As(err, &ae) || ae.Code != "1404" {
		t.Fatalf("call of an unknown action = %v, want a *kit.APIError with code 1404", err)
	}
	if got, want := err.Error(), "onebot: no_such_action: code 1404: unsupported action no_such_action"; got != want {
		t.Errorf("error text %q, want %q", got, want)
	}
}
