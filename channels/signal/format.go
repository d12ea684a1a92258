package signal

import "github.com/nanobot-go/nanobot/channels/markdown"

// Format renders the agent's Markdown for Signal, which shows plain text.
func Format(md string) string { return markdown.PlainText(md) }
