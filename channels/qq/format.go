package qq

import (
	"regexp"
	"strings"
	"sync"

	"github.com/nanobot-go/nanobot/channels/markdown"
)

// plainRules flatten Markdown for QQ's plain text messages (msg_type 0),
// which show every character as typed. Outside code blocks: headings lose
// their #s, bold/italic/strike markers and inline-code backticks go, links
// become "text (url)", images their URL, list bullets "•", and table
// separator rows disappear (rows keep their | cells). Code blocks keep
// their ``` fences, so code stays recognisable and splits stay intact.
var plainRules = markdown.Rules{
	Heading: func(_ int, text, _ string) string { return text },
	Bullet:  func(string) string { return "•" },
	Bold:    keep,
	Italic:  keep,
	Strike:  keep,
	Code:    keep,
	Link: func(text, url string) string {
		if text == url {
			return url
		}
		return text + " (" + url + ")"
	},
	Image: func(_, url string) string { return url },
}

// cellRules render the cells of a table row: plainRules without tables.
var cellRules = plainRules

func init() { plainRules.Table = plainTable }

func keep(s string) string { return s }

// toPlain flattens Markdown for QQ's plain text messages.
func toPlain(md string) string { return markdown.Render(md, plainRules) }

// markdownRules adapt Markdown for QQ's native Markdown messages (msg_type
// 2), which render headings, emphasis, links, lists, quotes and code blocks
// but not tables: a table is put in a code block so its columns line up.
var markdownRules = markdown.Rules{
	Table: func(rows []string) string { return "```\n" + strings.Join(rows, "\n") + "\n```" },
}

// toMarkdown adapts Markdown for QQ's native Markdown messages.
func toMarkdown(md string) string { return markdown.Render(md, markdownRules) }

// Compiled on first use: a process without this channel never builds it.
var separatorRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?$`) })

// plainTable drops the separator rows ("|---|:-:|") and flattens the rest.
func plainTable(rows []string) string {
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		if separatorRe().MatchString(r) {
			continue
		}
		out = append(out, markdown.Render(r, cellRules))
	}
	return strings.Join(out, "\n")
}
