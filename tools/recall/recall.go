// Package recall is the memory_search tool: the agent looks up what it
// was told before, in its long-term memory (MEMORY.md), its history of
// past conversations (HISTORY.md) and every stored conversation, current
// and archived, and each hit names where it comes from, so the agent can
// say where it knows something from.
//
// Ranking is BM25 over words (Latin scripts) and character pairs (Chinese,
// Japanese, Korean), computed over the documents at each call: nothing is
// kept between calls, so what a turn saved is found by the next one and
// there is no index to go stale or damaged. The conversations read are
// capped (newest first) so a call stays fast on a long-lived agent. A
// Tool is safe for concurrent use.
package recall

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
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

// Conversations walks the stored messages, newest conversations first,
// reading at most maxBytes of them; fn returning an error stops it.
type Conversations func(ctx context.Context, maxBytes int64, fn func(Message) error) error

// Options configures the tool.
type Options struct {
	// Workspace holds memory/MEMORY.md and memory/HISTORY.md.
	Workspace string
	// Conversations is the session store's walk; nil searches the memory
	// files only.
	Conversations Conversations
	// MaxConversationBytes caps what one call reads of the conversations
	// (default 32 MiB, the newest first).
	MaxConversationBytes int64
}

// Tool is memory_search.
type Tool struct{ opts Options }

var _ tools.Tool = (*Tool)(nil)

// New returns the tool.
func New(opts Options) *Tool {
	if opts.MaxConversationBytes <= 0 {
		opts.MaxConversationBytes = 32 << 20
	}
	return &Tool{opts: opts}
}

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

// doc is one searchable piece and where it comes from.
type doc struct {
	source string
	text   string
	terms  map[string]int
	length int
}

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
	docs, err := t.collect(ctx)
	if err != nil {
		return tools.Result{}, err
	}
	hits := rank(docs, qterms)
	if len(hits) == 0 {
		return tools.Result{Content: fmt.Sprintf("Nothing found for %q in memory, history or %d stored messages.", query, len(docs))}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d result(s) for %q, best first:\n", min(len(hits), limit), query)
	for i, h := range hits[:min(len(hits), limit)] {
		fmt.Fprintf(&b, "\n%d. [%s]\n%s\n", i+1, h.source, snippet(h.text, qterms))
	}
	return tools.Result{Content: strings.TrimRight(b.String(), "\n")}, nil
}

// collect reads the documents: MEMORY.md by section, HISTORY.md by entry,
// then the conversations' messages.
func (t *Tool) collect(ctx context.Context) ([]*doc, error) {
	var docs []*doc
	add := func(source, text string) {
		if ts := terms(text); len(ts) > 0 {
			d := &doc{source: source, text: text, terms: map[string]int{}, length: len(ts)}
			for _, w := range ts {
				d.terms[w]++
			}
			docs = append(docs, d)
		}
	}
	mem := filepath.Join(t.opts.Workspace, "memory")
	if data, err := os.ReadFile(filepath.Join(mem, "MEMORY.md")); err == nil {
		for _, sec := range sections(string(data)) {
			add("MEMORY.md"+sec.title, sec.body)
		}
	}
	if data, err := os.ReadFile(filepath.Join(mem, "HISTORY.md")); err == nil {
		for _, e := range entries(string(data)) {
			add("HISTORY.md"+e.title, e.body)
		}
	}
	if t.opts.Conversations != nil {
		// Other people's conversations are the owner's to search: an admin
		// (or the terminal, with no chat) searches them all, anyone else
		// only the conversation they are in, current and archived.
		own := ""
		if cc, ok := tools.CallContextFrom(ctx); ok && !cc.Admin {
			own = cc.SessionKey
		}
		err := t.opts.Conversations(ctx, t.opts.MaxConversationBytes, func(m Message) error {
			if m.Role != "user" && m.Role != "assistant" || strings.TrimSpace(m.Text) == "" {
				return nil
			}
			if own != "" && m.Session != own {
				return nil
			}
			add(messageSource(m), m.Text)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("memory_search: reading the conversations: %w", err)
		}
	}
	return docs, nil
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

// rank returns the documents that contain a query term, best first.
func rank(docs []*doc, q []string) []*doc {
	if len(docs) == 0 {
		return nil
	}
	avg := 0.0
	for _, d := range docs {
		avg += float64(d.length)
	}
	avg /= float64(len(docs))
	df := map[string]int{}
	uniq := map[string]bool{}
	for _, w := range q {
		uniq[w] = true
	}
	for _, d := range docs {
		for w := range uniq {
			if d.terms[w] > 0 {
				df[w]++
			}
		}
	}
	type scored struct {
		d     *doc
		score float64
	}
	var hits []scored
	for _, d := range docs {
		s := 0.0
		for w := range uniq {
			tf := float64(d.terms[w])
			if tf == 0 {
				continue
			}
			idf := math.Log(1 + (float64(len(docs))-float64(df[w])+0.5)/(float64(df[w])+0.5))
			s += idf * tf * (k1 + 1) / (tf + k1*(1-b+b*float64(d.length)/avg))
		}
		if s > 0 {
			hits = append(hits, scored{d, s})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	out := make([]*doc, len(hits))
	for i, h := range hits {
		out[i] = h.d
	}
	return out
}

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
