package sessions

import (
	"context"
	"fmt"
	"strings"

	"github.com/nanobot-go/nanobot/internal/untrusted"
	"github.com/nanobot-go/nanobot/tools"
)

// Search is the search_sessions tool.
type Search struct{ src Source }

func (t *Search) Name() string { return "search_sessions" }
func (t *Search) Description() string {
	return fmt.Sprintf("Find the agent's other conversations whose messages mention some text (case-insensitive), newest first: "+
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
	// One pass over the stored conversations, as memory_search reads
	// them: the newest first, capped, without loading each into memory.
	var order []string
	hits := map[string][]string{} // by session: the latest searchExcerpts matches
	err = t.src.Walk(ctx, searchBytes, func(key string, m Message) error {
		if key == current {
			return nil
		}
		at := strings.Index(strings.ToLower(m.Text), q)
		if at < 0 {
			return nil
		}
		if _, seen := hits[key]; !seen {
			if len(order) == searchSessions {
				return nil // enough conversations; the walk ends with its cap
			}
			order = append(order, key)
		}
		line := fmt.Sprintf("  [%s] %s: %s", m.Time.Format("2006-01-02"), m.Role, excerpt(m.Text, at, len(q)))
		if hits[key] = append(hits[key], line); len(hits[key]) > searchExcerpts {
			hits[key] = hits[key][1:]
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		return tools.Result{}, fmt.Errorf("search conversations: %w", err)
	}
	var b strings.Builder
	found := 0
	for _, key := range order {
		sum, _, err := t.src.Read(ctx, key)
		if err != nil {
			continue // gone meanwhile: the others still count
		}
		found++
		fmt.Fprintf(&b, "- %s — %q (%s, last %s)\n%s\n", sum.Key, tools.OneLine(sum.Title, 80), sum.Channel, sum.Updated.Format("2006-01-02 15:04"), strings.Join(hits[key], "\n"))
	}
	if found == 0 {
		return tools.Result{Content: fmt.Sprintf("No other conversation mentions %q.", q)}, nil
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
