package dingtalk

import (
	"strings"

	"github.com/nanobot-go/nanobot/channels/markdown"
)

// dingTalkRules adapt Markdown to DingTalk's sampleMarkdown, which renders
// headings, bold, italics, links, images, lists, quotes and code but not
// tables or strikethrough: tables are put in a code block (their columns
// stay aligned) and ~~strike~~ loses its tildes. Code is never touched.
var dingTalkRules = markdown.Rules{
	Table:  fenceTable,
	Strike: func(inner string) string { return inner },
}

// toDingTalk adapts Markdown to DingTalk's sampleMarkdown.
func toDingTalk(md string) string { return markdown.Render(md, dingTalkRules) }

// fenceTable puts a table in a code block.
func fenceTable(rows []string) string {
	return "```\n" + strings.Join(rows, "\n") + "\n```"
}
