package webhook_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/webhook"
)

// BenchmarkSignedRequest measures one async request through the handler:
// read, verify the timestamp and HMAC, the replay check, decode, deliver.
// The replay memory holds 65,536 signatures, so keep -benchtime below that
// (the default 1 s makes about 20,000 requests on a 2-core machine).
func BenchmarkSignedRequest(b *testing.B) {
	discard := channels.InboxFunc(func(context.Context, bus.Inbound) error { return nil })
	ch, _ := setup(b, map[string]webhook.Hook{"ha": {Secret: secret, ReplyURL: "http://127.0.0.1:1/r"}}, discard, nil)
	h := ch.WebhookHandler()
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		body := fmt.Appendf(nil, `{"chatId":"c","senderId":"s","text":"turn the lights off","id":"%d"}`, i)
		ts := time.Now().Unix()
		r := httptest.NewRequest(http.MethodPost, "/hooks/ha", bytes.NewReader(body))
		r.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts, 10))
		r.Header.Set(webhook.HeaderSignature, webhook.Sign(secret, ts, body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusAccepted {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}
