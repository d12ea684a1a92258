package signal

import (
	"strings"

	"github.com/nanobot-go/nanobot/channels/markdown"
)

// plain writes Markdown as the plain text Signal shows: emphasis markers
// go, links show their address, headings lose their hashes; code blocks,
// lists, quotes and tables stay as written (they read well as text).
var plain = markdown.Rules{
	Heading: func(_ int, text, _ string) string { return text },
	Bold:    func(inner string) string { return inner },
	Italic:  func(inner string) string { return inner },
	Strike:  func(inner string) string { return inner },
	Link: func(text, url string) string {
		if text == "" || text == url || strings.TrimPrefix(url, "mailto:") == text {
			return url
		}
		return text + " (" + url + ")"
	},
	Image: func(alt, url string) string {
		if alt == "" {
			return url
		}
		return alt + " (" + url + ")"
	},
}

// Format renders the agent's Markdown for Signal.
func Format(md string) string { return strings.TrimSpace(markdown.Render(md, plain)) }
