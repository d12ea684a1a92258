package discord

import (
	"strings"

	"github.com/nanobot-go/nanobot/channels/markdown"
)

// discordRules adapt Markdown to what Discord renders. Discord renders most
// of it itself (bold, italics, code, fences, links, lists, quotes, # to ###
// headings), so only two things change, outside code:
//
//   - headings of level 4 and deeper (shown raw by Discord) become bold;
//   - tables (shown raw, misaligned) are wrapped in a code block so their
//     columns line up.
var discordRules = markdown.Rules{
	Heading: func(level int, text, source string) string {
		if level < 4 || strings.TrimSpace(text) == "" {
			return source
		}
		return "**" + text + "**"
	},
	Table: func(rows []string) string { return "```\n" + strings.Join(rows, "\n") + "\n```" },
}

// toDiscord adapts Markdown to what Discord renders.
func toDiscord(md string) string { return markdown.Render(md, discordRules) }
