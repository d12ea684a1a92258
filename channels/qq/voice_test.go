package qq

import (
	"testing"

	"github.com/nanobot-go/nanobot/channels"
)

// QQ takes voice only as SILK: its chats get no spoken replies.
func TestNoVoiceReplies(t *testing.T) {
	if channels.CanSpeak(&Channel{}) {
		t.Error("CanSpeak(qq) = true; QQ cannot take Ogg/Opus voice")
	}
}
