// Package history converts the OpenAI-shaped providers.Message history
// into the block-based turns that the Anthropic Messages API and Bedrock
// Converse both take: system text apart, user and assistant turns that
// alternate (consecutive messages of one role merged), and tool results
// sent as user blocks. Each backend says, in a Blocks, how its wire format
// spells a text, an image, an assistant message and a tool result; the walk
// is the same for both.
package history

import (
	"fmt"
	"strings"

	"github.com/nanobot-go/nanobot/providers"
)

// EmptyText stands in for empty content: both APIs reject empty text
// blocks.
const EmptyText = "(empty)"

// Turn is one user or assistant message under construction.
type Turn[B any] struct {
	Role   string // providers.RoleUser or providers.RoleAssistant
	Blocks []B
}

// Blocks says how one wire format spells each kind of content block B.
// All fields must be set.
type Blocks[B any] struct {
	// Text is a text block; it is never given "".
	Text func(string) B
	// Image is the block for an image_url part's URL: an image, or a text
	// note where the URL cannot be sent.
	Image func(url string) B
	// Assistant converts an assistant message; no blocks adds no turn.
	Assistant func(providers.Message) []B
	// ToolResult answers the tool call toolCallID with content, which is
	// never empty.
	ToolResult func(toolCallID string, content []B) B
}

// Convert splits msgs into the system texts and the alternating turns.
// An empty user message or tool result becomes EmptyText. It fails on a
// tool message without a tool_call_id and on an unknown role.
func (b Blocks[B]) Convert(msgs []providers.Message) (system []string, turns []Turn[B], err error) {
	add := func(role string, blocks ...B) {
		if len(blocks) == 0 {
			return
		}
		if n := len(turns); n > 0 && turns[n-1].Role == role {
			turns[n-1].Blocks = append(turns[n-1].Blocks, blocks...)
			return
		}
		turns = append(turns, Turn[B]{Role: role, Blocks: blocks})
	}
	for i, m := range msgs {
		switch m.Role {
		case providers.RoleSystem:
			if text := m.Text(); strings.TrimSpace(text) != "" {
				system = append(system, text)
			}
		case providers.RoleUser:
			add(providers.RoleUser, b.nonEmpty(m)...)
		case providers.RoleAssistant:
			add(providers.RoleAssistant, b.Assistant(m)...)
		case providers.RoleTool:
			if m.ToolCallID == "" {
				return nil, nil, fmt.Errorf("message %d: tool result without tool_call_id", i)
			}
			add(providers.RoleUser, b.ToolResult(m.ToolCallID, b.nonEmpty(m)))
		default:
			return nil, nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	return system, turns, nil
}

// Content converts a message's text and image content; nil when it has
// none.
func (b Blocks[B]) Content(m providers.Message) []B {
	if len(m.Parts) == 0 {
		if m.Content == "" {
			return nil
		}
		return []B{b.Text(m.Content)}
	}
	var blocks []B
	for _, part := range m.Parts {
		switch part.Type {
		case "image_url":
			if part.ImageURL != nil {
				blocks = append(blocks, b.Image(part.ImageURL.URL))
			}
		default:
			if part.Text != "" {
				blocks = append(blocks, b.Text(part.Text))
			}
		}
	}
	return blocks
}

// nonEmpty is m's content, or an EmptyText block when it has none.
func (b Blocks[B]) nonEmpty(m providers.Message) []B {
	if blocks := b.Content(m); len(blocks) > 0 {
		return blocks
	}
	return []B{b.Text(EmptyText)}
}

// ToolInput is a replayed tool call's arguments as an object. Arguments
// that do not parse become an empty object: the call ran (or failed) with
// them already, and the replay only needs a valid one.
func ToolInput(tc providers.ToolCall) map[string]any {
	args, _, err := providers.ParseToolArguments(tc.Function.Arguments)
	if err != nil {
		return map[string]any{}
	}
	return args
}
