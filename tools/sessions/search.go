package sessions

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/nanobot-go/nanobot/internal/untrusted"
	"github.com/nanobot-go/nanobot/tools"
)

// searchScan bounds how many conversations one search reads, newest first.
const searchScan = 300

// Search is the search_sessions tool.
type Search struct{ src Source }

func (t *Search) Name() string { return "search_sessions" }
func (t *Search) Description() string {
	return fmt.Sprintf("Find the agent's other conversations that mention some text (in their title or messages, case-insensitive), newest first: "+
		"up to %d conversations with short excerpts. Use it when the user asks about a past conversation; read_session shows more. "+
		"For what the agent remembers across conversations, memory_search is usually better. Owner only.", searchSessions)
}
func (t *Search) Parameters() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{
		"query": map[string]any{"type": "string", "minLength": 1, "maxLength": 500, "description": "Text to find."},
	}, "required": []any{"query"}}
}

func (t *Search) Execute(ctx context.Context, args map[string]any) (tools.Result, error) {
	current, err := owner(ctx)
	if err != nil {
		return tools.Result{}, err
	}
	q := strings.ToLower(strings.TrimSpace(tools.Args(args).String("query")))
	if q == "" {
		return tools.Result{}, fmt.Errorf("query is empty")
	}
	all, err := t.src.List(ctx)
	if err != nil {
		return tools.Result{}, fmt.Errorf("list conversations: %w", err)
	}
	slices.SortFunc(all, func(a, b Summary) int { return cmp.Or(b.Updated.Compare(a.Updated), cmp.Compare(a.Key, b.Key)) })
	var b strings.Builder
	found, scanned := 0, 0
	for _, s := range all {
		if s.Key == current {
			continue
		}
		if found == searchSessions || scanned == searchScan || ctx.Err() != nil {
			break
		}
		scanned++
		sum, msgs, err := t.src.Read(ctx, s.Key)
		if err != nil {
			continue // gone meanwhile, or unreadable: the others still count
		}
		var hits []string
		for i := len(msgs) - 1; i >= 0 && len(hits) < searchExcerpts; i-- {
			if at := strings.Index(strings.ToLower(msgs[i].Text), q); at >= 0 {
				hits = append(hits, fmt.Sprintf("  [%s] %s: %s", msgs[i].Time.Format("2006-01-02"), msgs[i].Role, excerpt(msgs[i].Text, at, len(q))))
			}
		}
		if len(hits) == 0 && !strings.Contains(strings.ToLower(sum.Title), q) {
			continue
		}
		found++
		fmt.Fprintf(&b, "- %s — %q (%s, last %s)\n%s\n", sum.Key, oneLine(sum.Title, 80), sum.Channel, sum.Updated.Format("2006-01-02 15:04"), strings.Join(hits, "\n"))
	}
	if found == 0 {
		return tools.Result{Content: fmt.Sprintf("No other conversation mentions %q (%d searched).", q, scanned)}, nil
	}
	return tools.Result{Content: untrusted.Wrap("conversation search", b.String())}, nil
}

// excerpt is about excerptChars of text around the match at byte offset
// at (of n bytes), on one line.
func excerpt(text string, at, n int) string {
	start := max(0, at-excerptChars/2)
	end := min(len(text), at+n+excerptChars/2)
	for start > 0 && !utf8Start(text[start]) {
		start--
	}
	for end < len(text) && !utf8Start(text[end]) {
		end++
	}
	s := strings.Join(strings.Fields(text[start:end]), " ")
	if start > 0 {
		s = "…" + s
	}
	if end < len(text) {
		s += "…"
	}
	return s
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
