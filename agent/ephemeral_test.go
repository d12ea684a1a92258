package agent

import (
	"context"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
)

// An ephemeral turn runs on the conversation the sender supplied and
// leaves no session behind; its final reply carries the turn's usage.
func TestEphemeralTurnUsesSuppliedHistoryAndStoresNothing(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) {
		return &providers.LLMResponse{Content: "Paris.", FinishReason: providers.FinishStop,
			Usage: providers.Usage{PromptTokens: 11, CompletionTokens: 2}}, nil
	}}
	h := newHarness(t, llm, nil, nil)
	h.loop.Submit(context.Background(), bus.Inbound{
		Channel: "api", ChatID: "req-1", SenderID: "api", Source: bus.SourceAPI, Ephemeral: true,
		Content: "And its capital?",
		History: []bus.Turn{{Role: "user", Content: "Think of France."}, {Role: "assistant", Content: "Done."}, {Role: "tool", Content: "dropped"}},
	})
	waitfor.True(t, "turn done", func() bool { return h.doneCount() == 1 })

	req := llm.reqs()[0]
	var got []string
	for _, m := range req.Messages[1 : len(req.Messages)-1] {
		got = append(got, m.Role+": "+m.Text())
	}
	if diff := cmp.Diff([]string{"user: Think of France.", "assistant: Done."}, got); diff != "" {
		t.Errorf("history sent to the model (-want +got):\n%s", diff)
	}
	var final bus.Outbound
	for _, m := range h.out.all() {
		if m.Final {
			final = m
		}
	}
	if final.Content != "Paris." || final.Usage == nil || *final.Usage != (bus.Usage{PromptTokens: 11, CompletionTokens: 2}) {
		t.Errorf("final reply %q usage %+v, want \"Paris.\" with 11+2 tokens", final.Content, final.Usage)
	}
	entries, err := os.ReadDir(h.ws + "/sessions")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("ephemeral turn stored %d session files, want none", len(entries))
	}
}
