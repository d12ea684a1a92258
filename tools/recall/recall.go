// Package recall is the memory_search tool: the agent looks up what it
// was told before, in its long-term memory (MEMORY.md), its history of
// past conversations (HISTORY.md) and every stored conversation, current
// and archived, and each hit names where it comes from, so the agent can
// say where it knows something from.
//
// The search runs over an Index kept in the workspace (memory/.index):
// BM25 over words (Latin scripts) and character pairs (Chinese, Japanese,
// Korean) always, fused with the cosine of embeddings when an Embedder is
// configured. The index reads only what was added to the files since it
// last looked, survives restarts and rebuilds itself when its file is
// damaged; see Index for its concurrency rules. A Tool is safe for
// concurrent use.
package recall

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/tools"
)

// Message is one stored message of a conversation.
type Message struct {
	// Session is the conversation's key; Archived marks one put aside
	// by /new.
	Session  string
	Archived bool
	// Role is "user" or "assistant"; Text what was said; Time when it was
	// stored (RFC 3339, may be empty).
	Role, Text, Time string
}

// Tool is memory_search.
type Tool struct{ index *Index }

var _ tools.Tool = (*Tool)(nil)

// New returns the tool searching index.
func New(index *Index) *Tool { return &Tool{index: index} }

func (t *Tool) Name() string { return "memory_search" }

func (t *Tool) Description() string {
	return "Search what you were told before: your long-term memory (MEMORY.md), the history of past conversations (HISTORY.md) " +
		"and every stored conversation, including ones set aside with /new. Use it when the user refers to something earlier " +
		"(\"what did I say about…\", \"the flight I mentioned\") or when you need a fact you may have been given. " +
		"Each result names its source (the conversation and date, or the memory file), so you can say where you know it from."
}

func (t *Tool) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"query": map[string]any{"type": "string", "minLength": 1, "description": "what to look for: the words the earlier message would contain"},
			"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": maxLimit, "description": fmt.Sprintf("results to return (default %d)", defaultLimit)},
		},
		"required": []any{"query"},
	}
}

const (
	defaultLimit = 8
	maxLimit     = 20
	snippetRunes = 300
)

func (t *Tool) Execute(ctx context.Context, args map[string]any) (tools.Result, error) {
	query, _ := args["query"].(string)
	qterms := terms(query)
	if len(qterms) == 0 {
		return tools.Result{}, errors.New("the query has no words to look for")
	}
	limit := defaultLimit
	if n, ok := args["limit"].(float64); ok && n >= 1 {
		limit = min(int(n), maxLimit)
	}
	// Other people's conversations are the owner's to search: an admin (or
	// the terminal, with no chat) searches them all, anyone else only the
	// conversation they are in, current and archived.
	var scope Scope
	if cc, ok := tools.CallContextFrom(ctx); ok && !cc.Admin {
		scope.Session = cc.SessionKey
	}
	hits, searched, err := t.index.Search(ctx, query, limit, scope)
	if err != nil {
		return tools.Result{}, fmt.Errorf("memory_search: %w", err)
	}
	if len(hits) == 0 {
		return tools.Result{Content: fmt.Sprintf("Nothing found for %q in memory, history or %d stored pieces.", query, searched)}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d result(s) for %q, best first:\n", len(hits), query)
	for i, h := range hits {
		fmt.Fprintf(&b, "\n%d. [%s]\n%s\n", i+1, h.Label, snippet(h.Text, qterms))
	}
	return tools.Result{Content: strings.TrimRight(b.String(), "\n")}, nil
}

// messageSource names a message: "conversation telegram:42 (archived),
// the user, 2026-12-01 14:03 UTC".
func messageSource(m Message) string {
	var b strings.Builder
	b.WriteString("conversation ")
	b.WriteString(m.Session)
	if m.Archived {
		b.WriteString(" (archived)")
	}
	if m.Role == "user" {
		b.WriteString(", the user")
	} else {
		b.WriteString(", you")
	}
	if at, err := time.Parse(time.RFC3339Nano, m.Time); err == nil {
		b.WriteString(", ")
		b.WriteString(at.UTC().Format("2006-01-02 15:04 UTC"))
	}
	return b.String()
}

type part struct{ title, body string }

// sections cuts MEMORY.md at its "## " headings.
func sections(text string) []part {
	var out []part
	cur := part{}
	for _, line := range strings.Split(text, "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			if strings.TrimSpace(cur.body) != "" {
				out = append(out, cur)
			}
			cur = part{title: " § " + strings.TrimSpace(h)}
			continue
		}
		cur.body += line + "\n"
	}
	if strings.TrimSpace(cur.body) != "" {
		out = append(out, cur)
	}
	return out
}

// entries cuts HISTORY.md into its entries: each begins with a
// "[YYYY-MM-DD ...]" stamp (or, in other files, a blank line), which
// names it.
func entries(text string) []part {
	var out []part
	cur := part{}
	flush := func() {
		if strings.TrimSpace(cur.body) != "" {
			out = append(out, cur)
		}
		cur = part{}
	}
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "[") && len(trimmed) > 11 && trimmed[1] >= '0' && trimmed[1] <= '9' {
			flush()
			if end := strings.Index(trimmed, "]"); end > 0 {
				cur.title = ", " + trimmed[1:end]
			}
		} else if trimmed == "" && cur.title == "" {
			flush()
			continue
		}
		cur.body += line + "\n"
	}
	flush()
	return out
}

// BM25's constants (the usual values).
const (
	k1 = 1.2
	b  = 0.75
)

// snippet is the text around the first query term it contains, about
// snippetRunes long, on one line.
func snippet(text string, q []string) string {
	flat := strings.Join(strings.Fields(text), " ")
	r := []rune(flat)
	if len(r) <= snippetRunes {
		return flat
	}
	lower := strings.ToLower(flat)
	at := -1
	for _, w := range q {
		if i := strings.Index(lower, w); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	start := 0
	if at > 0 {
		start = max(0, len([]rune(lower[:at]))-snippetRunes/3)
	}
	end := min(len(r), start+snippetRunes)
	s := string(r[start:end])
	if start > 0 {
		s = "…" + s
	}
	if end < len(r) {
		s += "…"
	}
	return s
}
