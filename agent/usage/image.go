package usage

import (
	"context"
	"log/slog"

	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/image"
)

// ImageRecorder returns what the generate_image tool reports its calls
// to (image.Options.Record): each call becomes a ledger record of kind
// image, charged to the conversation on the call's context. A failed
// append is logged; the tool's answer does not depend on it.
func ImageRecorder(l *Ledger, log *slog.Logger) func(context.Context, image.Call) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, c image.Call) {
		rec := Record{Kind: KindImage, Provider: c.Provider, Model: c.Model, Latency: c.Latency, Outcome: OutcomeOK,
			Input: c.Input, Output: c.Output, CostUSD: c.CostUSD}
		if c.Err != nil {
			rec.Outcome = OutcomeError
		}
		if cc, ok := tools.CallContextFrom(ctx); ok {
			rec.Channel, rec.Chat, rec.Session, rec.Sender, rec.Source = cc.Channel, cc.ChatID, cc.SessionKey, cc.SenderID, cc.Source
		}
		if _, err := l.Append(rec); err != nil {
			log.Error("recording image usage failed", "err", err)
		}
	}
}
