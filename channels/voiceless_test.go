package channels

import (
	"context"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
)

// filesChannel sends files and nothing else.
type filesChannel struct{}

func (filesChannel) Name() string                           { return "files" }
func (filesChannel) Run(ctx context.Context, _ Inbox) error { <-ctx.Done(); return nil }
func (filesChannel) Send(context.Context, bus.Outbound) (MessageRef, error) {
	return MessageRef{}, nil
}
func (filesChannel) SendMedia(context.Context, bus.Outbound) (MessageRef, error) {
	return MessageRef{}, nil
}

type voicelessChannel struct{ filesChannel }

func (voicelessChannel) Voiceless() {}

// A channel with files can be spoken to (a voice reply goes as a file),
// unless it declares itself Voiceless.
func TestVoicelessCannotSpeak(t *testing.T) {
	if !CanSpeak(filesChannel{}) {
		t.Error("CanSpeak is false for a channel with files")
	}
	if CanSpeak(voicelessChannel{}) {
		t.Error("CanSpeak is true for a Voiceless channel")
	}
}
