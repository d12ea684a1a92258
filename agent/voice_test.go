package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/providers"
)

type fakeSpeaker struct {
	mu    sync.Mutex
	said  []string
	fail  error
	calls int
}

func (f *fakeSpeaker) Speak(_ context.Context, text string) (bus.Media, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail != nil {
		return bus.Media{}, f.fail
	}
	f.said = append(f.said, text)
	return bus.Media{Path: "/media/voice.ogg", MIMEType: "audio/ogg"}, nil
}

func (f *fakeSpeaker) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// voices returns the voice messages published to a session, after the
// text they follow.
func voices(h *harness) []bus.Outbound {
	var out []bus.Outbound
	for _, m := range h.out.all() {
		if m.Voice {
			out = append(out, m)
		}
	}
	return out
}

func TestVoiceRepliesFollowVoiceNotesAndVoiceOn(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("**Sure**, here it is.") }}
	sp := &fakeSpeaker{}
	h := newHarness(t, llm, nil, func(c *LoopConfig) {
		c.Voice = VoiceConfig{Speaker: sp, CanSpeak: func(ch string) bool { return ch == "test" }}
	})
	dm := bus.Inbound{Channel: "test", ChatID: "c1", SenderID: "u"}

	typed := dm
	typed.Content = "typed question"
	h.ask(t, typed)
	if n := len(voices(h)); n != 0 {
		t.Fatalf("a typed message got %d voice replies, want 0", n)
	}

	note := dm
	note.Content, note.Voice = "[voice transcription] spoken question", true
	h.ask(t, note)
	v := voices(h)
	if len(v) != 1 || v[0].Media[0].Path != "/media/voice.ogg" || v[0].Final || v[0].ChatID != "c1" {
		t.Fatalf("voice replies after a voice note = %+v, want one non-final voice message", v)
	}
	all := h.out.all()
	if last := all[len(all)-1]; !last.Voice {
		t.Errorf("the voice message is not after the text: last = %+v", last)
	}
	if sp.said[0] != "Sure, here it is." {
		t.Errorf("spoken %q, want the answer without Markdown", sp.said[0])
	}

	on := dm
	on.Content = "/voice on"
	if got := h.ask(t, on); !strings.Contains(got, "Voice replies on") {
		t.Errorf("/voice on: %q", got)
	}
	h.ask(t, typed)
	if n := len(voices(h)); n != 2 {
		t.Errorf("with /voice on a typed message gave %d voice replies in all, want 2", n)
	}
	off := dm
	off.Content = "/voice off"
	h.ask(t, off)
	h.ask(t, typed)
	if n := len(voices(h)); n != 2 {
		t.Errorf("after /voice off: %d voice replies in all, want still 2", n)
	}

	// Another channel cannot speak: a voice note there gets text only.
	other := note
	other.Channel = "irc"
	h.ask(t, other)
	if n := sp.count(); n != 2 {
		t.Errorf("speaker called %d times, want 2 (never for a channel without voice)", n)
	}
}

func TestSpeakable(t *testing.T) {
	got := speakable("## Plan\n- **one** in C#\n* `two`\n\n> three")
	if want := "Plan\none in C#\ntwo\nthree"; got != want {
		t.Errorf("speakable = %q, want %q", got, want)
	}
}

func TestVoiceCommandInGroupNeedsAdmin(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("x") }}
	h := newHarness(t, llm, nil, func(c *LoopConfig) { c.Voice = VoiceConfig{Speaker: &fakeSpeaker{}} })
	g := bus.Inbound{Channel: "test", ChatID: "g", SenderID: "u", IsGroup: true, Content: "/voice on"}
	if got := h.ask(t, g); !strings.Contains(got, "Only an admin") {
		t.Errorf("non-admin /voice on in a group: %q", got)
	}
	g.Admin = true
	if got := h.ask(t, g); !strings.Contains(got, "Voice replies on") {
		t.Errorf("admin /voice on: %q", got)
	}
}

func TestVoiceReplyFailureKeepsText(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("answer") }}
	sp := &fakeSpeaker{fail: errors.New("tts: HTTP 500")}
	h := newHarness(t, llm, nil, func(c *LoopConfig) { c.Voice = VoiceConfig{Speaker: sp} })
	got := h.ask(t, bus.Inbound{Channel: "test", ChatID: "c1", Content: "hi", Voice: true})
	if got != "answer" || len(voices(h)) != 0 || sp.count() != 1 {
		t.Errorf("reply %q, %d voice messages, %d speak calls; want the text, no voice, one attempt", got, len(voices(h)), sp.count())
	}
}

func TestVoiceCommandWithoutTTS(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("x") }}
	h := newHarness(t, llm, nil, nil)
	if got := h.ask(t, bus.Inbound{Channel: "test", ChatID: "c1", Content: "/voice on"}); !strings.Contains(got, "not available") {
		t.Errorf("/voice on without tts: %q", got)
	}
}
