package line

import (
	"github.com/nanobot-go/nanobot/channels/markdown"
)

// Format renders the agent's Markdown for LINE, which shows plain text.
func Format(md string) string { return markdown.PlainText(md) }
