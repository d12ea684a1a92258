package history_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/internal/history"
)

// spell writes blocks as strings, so the walk can be checked on its own.
var spell = history.Blocks[string]{
	Text:  func(s string) string { return "text:" + s },
	Image: func(u string) string { return "image:" + u },
	Assistant: func(m providers.Message) []string {
		if m.Content == "" {
			return nil
		}
		return []string{"said:" + m.Content}
	},
	ToolResult: func(id string, content []string) string {
		return "result:" + id + "=" + strings.Join(content, "+")
	},
}

func TestConvert(t *testing.T) {
	msgs := []providers.Message{
		{Role: providers.RoleSystem, Content: "be brief"},
		{Role: providers.RoleSystem, Content: "  "},
		{Role: providers.RoleUser, Content: ""},
		{Role: providers.RoleUser, Parts: []providers.ContentPart{
			{Type: "text", Text: "look"},
			{Type: "image_url", ImageURL: &providers.ImageURL{URL: "data:x"}},
			{Type: "image_url"},
		}},
		{Role: providers.RoleAssistant, Content: ""},
		{Role: providers.RoleAssistant, Content: "calling"},
		{Role: providers.RoleTool, ToolCallID: "c1", Content: "42"},
		{Role: providers.RoleTool, ToolCallID: "c2"},
	}
	system, turns, err := spell.Convert(msgs)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"be brief"}; !reflect.DeepEqual(system, want) {
		t.Errorf("system = %q, want %q", system, want)
	}
	want := []history.Turn[string]{
		{Role: providers.RoleUser, Blocks: []string{"text:" + history.EmptyText, "text:look", "image:data:x"}},
		{Role: providers.RoleAssistant, Blocks: []string{"said:calling"}},
		{Role: providers.RoleUser, Blocks: []string{"result:c1=text:42", "result:c2=text:" + history.EmptyText}},
	}
	if !reflect.DeepEqual(turns, want) {
		t.Errorf("turns = %q\nwant    %q", turns, want)
	}
}

func TestConvertRejects(t *testing.T) {
	for _, m := range []providers.Message{
		{Role: providers.RoleTool, Content: "no id"},
		{Role: "narrator", Content: "?"},
	} {
		if _, _, err := spell.Convert([]providers.Message{m}); err == nil {
			t.Errorf("%+v: no error", m)
		}
	}
}

func TestToolInput(t *testing.T) {
	tc := func(args string) providers.ToolCall {
		return providers.ToolCall{Function: providers.FunctionCall{Arguments: args}}
	}
	if got := history.ToolInput(tc(`{"a":1}`)); !reflect.DeepEqual(got, map[string]any{"a": 1.0}) {
		t.Errorf("parsed = %v", got)
	}
	if got := history.ToolInput(tc(`[1,2`)); len(got) != 0 || got == nil {
		t.Errorf("broken = %#v, want an empty object", got)
	}
}
