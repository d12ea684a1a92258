package channels

import "testing"

type voicelessChannel struct{ mediaChannel }

func (voicelessChannel) Voiceless() {}

// A channel with files that declares itself Voiceless is never spoken to.
func TestVoicelessCannotSpeak(t *testing.T) {
	ch := voicelessChannel{mediaChannel{&fakeChannel{name: "qq", limit: 2000}}}
	if CanSpeak(ch) {
		t.Error("CanSpeak is true for a Voiceless channel")
	}
}
