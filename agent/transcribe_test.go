package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// fakeTranscriber answers with text for every file, or fails.
type fakeTranscriber struct {
	name string
	text string
	fail error

	mu    sync.Mutex
	calls []string // path (mime)
}

func (f *fakeTranscriber) Transcribe(_ context.Context, path, mimeType string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, path+" ("+mimeType+")")
	return f.text, f.fail
}

func (f *fakeTranscriber) Service() (string, string) { return f.name, f.name + "-model" }

func (f *fakeTranscriber) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func echoLLM() *fakeLLM {
	return &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("ok") }}
}

// A voice note on any channel is transcribed before its turn: the model
// sees the text with the audio still attached, and the session keeps it.
func TestVoiceNoteIsTranscribedBeforeTheTurn(t *testing.T) {
	llm := echoLLM()
	tr := &fakeTranscriber{name: "groq", text: "turn the lights off"}
	h := newHarness(t, llm, nil, func(c *LoopConfig) { c.Transcription = TranscriptionConfig{Transcriber: tr} })
	m := bus.Inbound{Channel: "discord", ChatID: "c1", SenderID: "u", Content: "from the car", Voice: true, Media: []bus.Media{
		{Path: "/media/voice-message.ogg", MIMEType: "audio/ogg", Name: "voice-message.ogg"},
		{Path: "/media/report.pdf", MIMEType: "application/pdf"},
		{Path: "/media/song.mp3"},                                      // no content type: told by the name
		{URL: "https://cdn.example/remote.ogg", MIMEType: "audio/ogg"}, // not downloaded: nothing to send
	}}
	h.ask(t, m)
	if got, want := tr.called(), []string{"/media/voice-message.ogg (audio/ogg)", "/media/song.mp3 ()"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("transcribed %q, want %q", got, want)
	}
	user := StripRuntimeContext(lastUser(llm.reqs()[0]))
	want := "from the car\n" +
		"[voice transcription] turn the lights off\n[attachment: /media/voice-message.ogg (audio/ogg)]\n" +
		"[attachment: /media/report.pdf (application/pdf)]\n" +
		"[voice transcription] turn the lights off\n[attachment: /media/song.mp3 (file)]\n" +
		"[attachment: https://cdn.example/remote.ogg (audio/ogg)]"
	if user != want {
		t.Errorf("the model saw\n%s\nwant\n%s", user, want)
	}
	sess, err := h.store.Load(context.Background(), m.Key())
	if err != nil {
		t.Fatal(err)
	}
	if hist := sess.History(0); len(hist) == 0 || !strings.Contains(hist[0].Text(), "[voice transcription] turn the lights off") {
		t.Errorf("the session does not keep the transcript: %+v", hist)
	}
}

// A failed transcription is logged, and the message goes to the model
// with its audio attached and no transcript.
func TestFailedTranscriptionDoesNotHoldTheMessage(t *testing.T) {
	llm := echoLLM()
	tr := &fakeTranscriber{name: "assemblyai", fail: errors.New("stt: assemblyai: status 503: overloaded")}
	var logs bytes.Buffer
	h := newHarness(t, llm, nil, func(c *LoopConfig) {
		c.Transcription = TranscriptionConfig{Transcriber: tr}
		c.Log = slog.New(slog.NewTextHandler(&logs, nil))
	})
	if got := h.ask(t, bus.Inbound{Channel: "slack", ChatID: "c1", SenderID: "u", Media: []bus.Media{{Path: "/media/a.m4a", MIMEType: "audio/mp4"}}}); got != "ok" {
		t.Errorf("answer %q", got)
	}
	user := lastUser(llm.reqs()[0])
	if strings.Contains(user, transcriptMarker) || !strings.Contains(user, "[attachment: /media/a.m4a (audio/mp4)]") {
		t.Errorf("the model saw %q, want the attachment without a transcript", user)
	}
	if !strings.Contains(logs.String(), "transcription failed") || !strings.Contains(logs.String(), "status 503") || !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("log %q, want a warning with the error", logs.String())
	}
}

// A transcript the platform supplied is kept; the channel's own
// transcriber wins over the shared one; without one nothing is sent.
func TestWhoTranscribes(t *testing.T) {
	llm := echoLLM()
	shared := &fakeTranscriber{name: "groq", text: "shared"}
	own := &fakeTranscriber{name: "custom", text: "own"}
	h := newHarness(t, llm, nil, func(c *LoopConfig) {
		c.Transcription = TranscriptionConfig{Transcriber: shared, ByChannel: map[string]Transcriber{"telegram": own}}
	})
	note := []bus.Media{{Path: "/media/v.ogg", MIMEType: "audio/ogg"}}
	h.ask(t, bus.Inbound{Channel: "telegram", ChatID: "c", SenderID: "u", Media: note})
	h.ask(t, bus.Inbound{Channel: "matrix", ChatID: "c", SenderID: "u", Media: note})
	h.ask(t, bus.Inbound{Channel: "feishu", ChatID: "c", SenderID: "u", Media: []bus.Media{{Path: "/media/v.opus", MIMEType: "audio/ogg", Transcript: "the platform's words"}}})
	if len(own.called()) != 1 || len(shared.called()) != 1 {
		t.Errorf("telegram's transcriber called %d times, the shared one %d; want 1 each", len(own.called()), len(shared.called()))
	}
	reqs := llm.reqs()
	for i, want := range []string{"[voice transcription] own", "[voice transcription] shared", "[voice transcription] the platform's words"} {
		if got := lastUser(reqs[i]); !strings.Contains(got, want) {
			t.Errorf("turn %d: the model saw %q, want %q", i, got, want)
		}
	}

	h = newHarness(t, llm, nil, func(c *LoopConfig) {
		c.Transcription = TranscriptionConfig{ByChannel: map[string]Transcriber{"telegram": own}}
	})
	h.ask(t, bus.Inbound{Channel: "discord", ChatID: "c", SenderID: "u", Media: note})
	if len(own.called()) != 1 {
		t.Errorf("telegram's transcriber was used on discord")
	}
}

// A voice note sent while a tool runs (steer mode) reaches the model
// transcribed.
func TestSteeredVoiceNoteIsTranscribed(t *testing.T) {
	toolStarted, releaseTool := make(chan struct{}), make(chan struct{})
	slow := toolFunc{name: "lookup", fn: func(ctx context.Context, _ map[string]any) (tools.Result, error) {
		close(toolStarted)
		<-releaseTool
		return tools.Result{Content: "22 degrees"}, nil
	}}
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		if len(req.Messages) == 2 {
			return &providers.LLMResponse{ToolCalls: []providers.ToolCallRequest{call("c1", "lookup", map[string]any{"query": "weather"})}}, nil
		}
		return text("72 degrees Fahrenheit.")
	}}
	tr := &fakeTranscriber{name: "groq", text: "in fahrenheit please"}
	h := newHarness(t, llm, toolList{slow}, func(c *LoopConfig) {
		queueMode(configs.QueueSteer)(c)
		c.Transcription = TranscriptionConfig{Transcriber: tr}
	})
	h.send("c", "what is the weather?")
	<-toolStarted
	h.loop.Submit(context.Background(), bus.Inbound{Channel: "test", ChatID: "c", SenderID: "u", MessageID: fmt.Sprint(time.Now().UnixNano()),
		Media: []bus.Media{{Path: "/media/v.ogg", MIMEType: "audio/ogg"}}})
	waitfor.True(t, "the voice note parked for the running turn", func() bool {
		h.loop.mu.Lock()
		defer h.loop.mu.Unlock()
		w := h.loop.workers["test:c"]
		return w != nil && len(w.steered) == 1
	})
	close(releaseTool)
	waitfor.True(t, "both messages done", func() bool { return h.doneCount() == 2 })
	reqs := llm.reqs()
	if len(reqs) != 2 || !strings.Contains(lastUser(reqs[1]), "[voice transcription] in fahrenheit please") {
		t.Errorf("the steered voice note reached the model as %q", lastUser(reqs[len(reqs)-1]))
	}
}

// Each transcription is a ledger record of its own kind, charged to the
// conversation.
func TestTranscriptionIsInTheLedger(t *testing.T) {
	dir := t.TempDir()
	led, err := usage.Open(t.Context(), dir, usage.Options{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = led.Close() })
	ok := &fakeTranscriber{name: "groq", text: "hi"}
	h := newHarness(t, echoLLM(), nil, func(c *LoopConfig) {
		c.Transcription = TranscriptionConfig{Transcriber: ok}
		c.Usage = led
	})
	note := []bus.Media{{Path: "/media/v.ogg", MIMEType: "audio/ogg"}}
	h.ask(t, bus.Inbound{Channel: "discord", ChatID: "c9", SenderID: "u7", Media: note})
	ok.fail = &providers.Error{Provider: "groq", StatusCode: 429, Message: "slow down"}
	h.ask(t, bus.Inbound{Channel: "discord", ChatID: "c9", SenderID: "u7", Media: note})

	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	var got []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
			var r map[string]any
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("ledger line %q: %v", line, err)
			}
			if r["kind"] == usage.KindTranscription {
				got = append(got, fmt.Sprintf("%v %v %v %v %v %v", r["provider"], r["model"], r["ch"], r["chat"], r["sender"], r["outcome"]))
			}
		}
	}
	want := []string{"groq groq-model discord c9 u7 ok", "groq groq-model discord c9 u7 rate_limited"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("transcription records %q, want %q", got, want)
	}
}

// A sender whose budget is used up is not transcribed: their turn is
// refused, and their audio is not sent anywhere first.
func TestNoTranscriptionOverBudget(t *testing.T) {
	led, err := usage.Open(t.Context(), t.TempDir(), usage.Options{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = led.Close() })
	if _, err := led.Append(usage.Record{Agent: DefaultAgentName, Channel: "discord", Sender: "u7", Input: 5000, Outcome: usage.OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	tr := &fakeTranscriber{name: "groq", text: "hi"}
	llm := echoLLM()
	h := newHarness(t, llm, nil, func(c *LoopConfig) {
		c.Transcription = TranscriptionConfig{Transcriber: tr}
		c.Runner.Budgets = usage.NewBudgets(led, usage.Limits{PerSender: usage.Budget{DailyTokens: 1000}}, nil)
	})
	note := []bus.Media{{Path: "/media/v.ogg", MIMEType: "audio/ogg"}}
	h.ask(t, bus.Inbound{Channel: "discord", ChatID: "c9", SenderID: "u7", Media: note})
	if got := tr.called(); len(got) != 0 {
		t.Errorf("an over-budget sender's audio was transcribed: %q", got)
	}
	if n := len(llm.reqs()); n != 0 {
		t.Errorf("%d model calls for an over-budget sender", n)
	}
	h.ask(t, bus.Inbound{Channel: "discord", ChatID: "c10", SenderID: "someone-else", Media: note})
	if got := tr.called(); len(got) != 1 {
		t.Errorf("another sender's note: transcribed %q, want once", got)
	}
}
