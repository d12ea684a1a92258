package memory

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/providers"
)

// planted are the facts a compaction must not lose: names, numbers,
// decisions and open tasks, among chatter and a huge tool result, one at
// the end of a message far longer than a tool result may be, one in
// Chinese.
var planted = []string{
	"Her name is Ingrid Solberg and she starts on 12 January",
	"the budget is 48,500 EUR",
	"We decided to go with PostgreSQL 17, not MySQL",
	"TODO: renew the TLS certificate before 2027-02-01",
	"the invoice number is INV-2026-0917",
	"我们决定周五下午三点开会",
}

// extractive is a faithful model: its summary keeps every line of the
// conversation that holds a name, a number, a decision or a task, and the
// memory it returns is the old one plus those lines. What it is given is
// what it keeps, so the test measures what the consolidation hands the
// model and what it does with the answer.
func extractive(t *testing.T) func(context.Context, providers.ChatRequest) (*providers.LLMResponse, error) {
	return func(_ context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
		return extract(t, req)
	}
}

func extract(t *testing.T, req providers.ChatRequest) (*providers.LLMResponse, error) {
	conv := requestConversation(req)
	keep := regexp.MustCompile(`[0-9]|decided|TODO|决定|[A-Z][a-z]+ [A-Z][a-z]+`)
	var lines []string
	for _, l := range strings.Split(conv, "\n") {
		if strings.Contains(l, "TOOL ") || !keep.MatchString(l) {
			continue
		}
		if _, said, ok := strings.Cut(l, ": "); ok {
			lines = append(lines, "- "+said)
		}
	}
	mem := strings.TrimSpace(requestMemory(t, req)) + "\n\n## From the conversation\n" + strings.Join(lines, "\n") + "\n"
	return saveCall("[2026-03-01 10:00] "+strings.Join(lines, " "), strings.TrimLeft(mem, "\n")), nil
}

// TestCompactKeepsWhatMatters: /compact's consolidation hands the model
// every planted fact whole — also the one at the end of a 20,000-character
// message and none lost to a 50,000-character tool result — and what the
// model keeps lands in MEMORY.md, which the next prompt carries; the last
// exchanges stay word for word.
func TestCompactKeepsWhatMatters(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, t.TempDir())
	p := &fakeProvider{reply: extractive(t)}
	opts := testOptions(t.TempDir(), p, st)
	opts.ContextWindowTokens = 200_000
	c := newConsolidator(t, opts)
	s := load(t, st, "test:1")
	long := strings.Repeat("Here is the draft I am working on, paragraph after paragraph. ", 330) + planted[4]
	msgs := []providers.Message{
		{Role: providers.RoleUser, Content: "hi, how are you"},
		{Role: providers.RoleAssistant, Content: "fine, thanks"},
		{Role: providers.RoleUser, Content: planted[0]},
		{Role: providers.RoleAssistant, Content: "noted"},
		{Role: providers.RoleUser, Content: "what's the weather"},
		{Role: providers.RoleAssistant, Content: "", ToolCalls: []providers.ToolCall{{ID: "c1", Type: "function", Function: providers.FunctionCall{Name: "web_fetch", Arguments: `{"url":"https://example.org"}`}}}},
		{Role: providers.RoleTool, ToolCallID: "c1", Name: "web_fetch", Content: strings.Repeat("weather data ", 4000)},
		{Role: providers.RoleAssistant, Content: "sunny"},
		{Role: providers.RoleUser, Content: planted[1] + " and " + strings.ToLower(planted[2][:1]) + planted[2][1:]},
		{Role: providers.RoleAssistant, Content: "good choice"},
		{Role: providers.RoleUser, Content: long},
		{Role: providers.RoleAssistant, Content: "looks good"},
		{Role: providers.RoleUser, Content: planted[3]},
		{Role: providers.RoleAssistant, Content: "I'll remind you"},
		{Role: providers.RoleUser, Content: planted[5]},
		{Role: providers.RoleAssistant, Content: "好的"},
		{Role: providers.RoleUser, Content: "last question: tea or coffee?"},
		{Role: providers.RoleAssistant, Content: "tea"},
		{Role: providers.RoleUser, Content: "thanks"},
		{Role: providers.RoleAssistant, Content: "any time"},
	}
	if err := st.Append(ctx, s, msgs...); err != nil {
		t.Fatal(err)
	}
	folded, err := c.Compact(ctx, s, 4)
	if err != nil || folded == 0 {
		t.Fatalf("Compact: folded %d, %v", folded, err)
	}
	reqs := p.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d consolidation calls, want 1", len(reqs))
	}
	sent := requestConversation(reqs[0])
	mem := readFile(t, c.MemoryPath())
	for _, f := range planted {
		if !strings.Contains(strings.ToLower(sent), strings.ToLower(f)) {
			t.Errorf("the model was not given %q", f)
		}
		if !strings.Contains(strings.ToLower(mem), strings.ToLower(f)) {
			t.Errorf("MEMORY.md lost %q:\n%s", f, mem)
		}
	}
	if len(sent) > 40_000 {
		t.Errorf("the consolidation prompt is %d characters: the tool result was not shortened", len(sent))
	}
	if !strings.Contains(reqs[0].Messages[0].Content, "decisions") || !strings.Contains(reqs[0].Messages[0].Content, "numbers") {
		t.Error("the instructions do not ask to keep decisions and numbers")
	}
	if got := c.MemoryContext(); !strings.Contains(got, planted[3]) {
		t.Errorf("the next prompt's memory lacks the open task:\n%s", got)
	}
	hist := s.History(0)
	if len(hist) != 4 || hist[0].Text() != "last question: tea or coffee?" || hist[3].Text() != "any time" {
		t.Errorf("after /compact the conversation sent is %d messages, want the last two exchanges as they were", len(hist))
	}
}
