package session

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/nanobot-go/nanobot/providers"
)

func u(text string) providers.Message {
	return providers.Message{Role: providers.RoleUser, Content: text}
}
func a(text string) providers.Message {
	return providers.Message{Role: providers.RoleAssistant, Content: text}
}
func sys(text string) providers.Message {
	return providers.Message{Role: providers.RoleSystem, Content: text}
}

// ac is an assistant message calling tools with the given ids.
func ac(text string, ids ...string) providers.Message {
	m := a(text)
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, providers.ToolCall{
			ID: id, Type: "function",
			Function: providers.FunctionCall{Name: "exec", Arguments: `{"cmd":"ls ` + id + `"}`},
		})
	}
	return m
}

// tr is the result of tool call id.
func tr(id string) providers.Message {
	return providers.Message{Role: providers.RoleTool, ToolCallID: id, Name: "exec", Content: "result " + id}
}

func TestHistory(t *testing.T) {
	tests := []struct {
		name   string
		msgs   []providers.Message
		cursor int
		max    int
		want   []providers.Message
	}{
		{"empty", nil, 0, 0, nil},
		{"plain turns", []providers.Message{u("q"), a("r"), u("q2")}, 0, 0, []providers.Message{u("q"), a("r"), u("q2")}},
		{"leading non-user skipped", []providers.Message{a("hi"), tr("x"), sys("s"), u("q"), a("r")}, 0, 0,
			[]providers.Message{u("q"), a("r")}},
		{"no user message gives nothing", []providers.Message{a("hi"), a("there")}, 0, 0, nil},
		{"system message inside kept", []providers.Message{u("q"), sys("note"), a("r")}, 0, 0,
			[]providers.Message{u("q"), sys("note"), a("r")}},
		{"complete tool turn kept", []providers.Message{u("q"), ac("", "1", "2"), tr("1"), tr("2"), a("done")}, 0, 0,
			[]providers.Message{u("q"), ac("", "1", "2"), tr("1"), tr("2"), a("done")}},
		{"orphan tool result removed", []providers.Message{u("q"), tr("zz"), a("r")}, 0, 0,
			[]providers.Message{u("q"), a("r")}},
		{"result for another call is orphan", []providers.Message{u("q"), ac("", "1"), tr("1"), tr("9"), a("r")}, 0, 0,
			[]providers.Message{u("q"), ac("", "1"), tr("1"), a("r")}},
		{"duplicate result removed", []providers.Message{u("q"), ac("", "1"), tr("1"), tr("1"), a("r")}, 0, 0,
			[]providers.Message{u("q"), ac("", "1"), tr("1"), a("r")}},
		{"result after an intervening message is orphan", []providers.Message{u("q"), ac("", "1"), u("q2"), tr("1")}, 0, 0,
			[]providers.Message{u("q"), u("q2")}},
		{"dangling call dropped, text kept", []providers.Message{u("q"), ac("checking", "1", "2"), tr("1"), u("q2")}, 0, 0,
			[]providers.Message{u("q"), ac("checking", "1"), tr("1"), u("q2")}},
		{"only dangling calls and no text: message dropped", []providers.Message{u("q"), ac("", "1"), u("q2")}, 0, 0,
			[]providers.Message{u("q"), u("q2")}},
		{"dangling at the end", []providers.Message{u("q"), ac("looking", "1")}, 0, 0,
			[]providers.Message{u("q"), a("looking")}},
		{"window cuts a tool-call pair", []providers.Message{u("q1"), ac("", "1"), tr("1"), a("done"), u("q2"), a("ok")}, 0, 4,
			[]providers.Message{u("q2"), a("ok")}},
		{"window keeps a whole pair", []providers.Message{u("q1"), ac("", "1"), tr("1"), a("done"), u("q2"), ac("", "2"), tr("2"), a("ok")}, 0, 4,
			[]providers.Message{u("q2"), ac("", "2"), tr("2"), a("ok")}},
		{"window between call and results, no user left", []providers.Message{u("q1"), ac("", "1", "2"), tr("1"), tr("2"), a("done")}, 0, 3,
			nil},
		{"cursor respected", []providers.Message{u("q1"), a("r1"), u("q2"), a("r2")}, 2, 0,
			[]providers.Message{u("q2"), a("r2")}},
		{"cursor mid-turn skips to next user", []providers.Message{u("q1"), ac("", "1"), tr("1"), a("r1"), u("q2")}, 2, 0,
			[]providers.Message{u("q2")}},
		{"cursor and window", []providers.Message{u("q1"), a("r1"), u("q2"), a("r2"), u("q3"), a("r3")}, 2, 3,
			[]providers.Message{u("q3"), a("r3")}},
		{"cursor past end clamps", []providers.Message{u("q1")}, 5, 0, nil},
		{"negative cursor clamps", []providers.Message{u("q1")}, -1, 0, []providers.Message{u("q1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Session{Key: "t:1", Messages: tt.msgs, LastConsolidated: tt.cursor}
			got := s.History(tt.max)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("History(%d) mismatch (-want +got):\n%s", tt.max, diff)
			}
		})
	}
}

func historyJSON(t *testing.T, s *Session, max int) []string {
	t.Helper()
	var out []string
	for _, m := range s.History(max) {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

func TestHistoryStableAndAppendOnly(t *testing.T) {
	s := &Session{Key: "t:1", Messages: []providers.Message{
		a("stray"), u("q1"), ac("let me look", "1", "2"), tr("1"), tr("2"), a("found it"),
	}}
	first := historyJSON(t, s, 0)
	if again := historyJSON(t, s, 0); !cmp.Equal(first, again) {
		t.Fatalf("History changed between calls:\n%s", cmp.Diff(first, again))
	}
	turns := [][]providers.Message{
		{u("q2"), a("r2")},
		{u("q3"), ac("", "3"), tr("3"), a("r3")},
		{tr("orphan"), u("q4")},
	}
	prev := first
	for i, turn := range turns {
		s.Messages = append(s.Messages, turn...)
		got := historyJSON(t, s, 0)
		if len(got) < len(prev) || !cmp.Equal(prev, got[:len(prev)]) {
			t.Fatalf("turn %d: History is not an extension of the previous one:\n%s", i, cmp.Diff(prev, got))
		}
		prev = got
	}
}

func TestHistoryReturnsCopies(t *testing.T) {
	img := providers.ImagePart("data:image/png;base64,AAAA")
	m := ac("see", "1")
	m.ThinkingBlocks = []providers.ThinkingBlock{{Type: "thinking", Thinking: "hmm", Signature: "sig"}}
	s := &Session{Key: "t:1", Messages: []providers.Message{
		{Role: providers.RoleUser, Parts: []providers.ContentPart{providers.TextPart("look"), img}}, m, tr("1"),
	}}
	before := historyJSON(t, s, 0)
	h := s.History(0)
	h[0].Parts[1].ImageURL.URL = "changed"
	h[0].Parts[0].Text = "changed"
	h[1].ToolCalls[0].ID = "changed"
	h[1].ThinkingBlocks[0].Thinking = "changed"
	h[2].Content = "changed"
	if after := historyJSON(t, s, 0); !cmp.Equal(before, after) {
		t.Errorf("changing History's result changed the session:\n%s", cmp.Diff(before, after))
	}
	if !strings.Contains(before[0], "data:image/png") {
		t.Errorf("image part missing from history: %s", before[0])
	}
}
