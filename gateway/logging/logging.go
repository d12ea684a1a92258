// Package logging builds the process logger: log/slog with a text or JSON
// handler on stderr, and a redacting handler in front of it so that
// credentials never reach a log line, whichever component logs them.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
)

// Options configure New.
type Options struct {
	// Level is "debug", "info", "warn" or "error" (default info).
	Level string
	// Format is "text" (default) or "json".
	Format string
	// Secrets are exact values to redact wherever they appear.
	Secrets []string
}

// ParseLevel converts a level name to a slog.Level.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if s == "" {
		return slog.LevelInfo, nil
	}
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("log level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// New returns a logger writing to w.
func New(w io.Writer, o Options) (*slog.Logger, *Redactor, error) {
	lvl, err := ParseLevel(o.Level)
	if err != nil {
		return nil, nil, err
	}
	hopts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler
	switch o.Format {
	case "", "text":
		h = slog.NewTextHandler(w, hopts)
	case "json":
		h = slog.NewJSONHandler(w, hopts)
	default:
		return nil, nil, fmt.Errorf("log format %q: want text or json", o.Format)
	}
	r := NewRedactor(o.Secrets)
	return slog.New(&redactHandler{next: h, r: r}), r, nil
}

const mask = "[REDACTED]"

// tokenShapes match well-known credential formats even when their values are
// not in the config (keys pasted into a chat, tokens in URLs).
var tokenShapes = regexp.MustCompile(strings.Join([]string{
	`sk-[A-Za-z0-9_\-]{16,}`,                                 // OpenAI, DeepSeek, Anthropic (sk-ant-...)
	`xox[abprs]-[A-Za-z0-9\-]{10,}`,                          // Slack bot/user tokens
	`xapp-[A-Za-z0-9\-]{10,}`,                                // Slack app tokens
	`gh[pousr]_[A-Za-z0-9]{20,}`,                             // GitHub tokens
	`AIza[0-9A-Za-z_\-]{30,}`,                                // Google API keys
	`\b[0-9]{8,10}:[A-Za-z0-9_\-]{35}\b`,                     // Telegram bot tokens
	`(?i)bearer\s+[A-Za-z0-9._~+/\-]{12,}=*`,                 // Authorization headers
	`(?i)/bot[0-9]{8,10}:[A-Za-z0-9_\-]{35}`,                 // Telegram API URLs
	`(?i)([?&](?:api_?key|token|access_token|key)=)[^&\s"]+`, // secrets in query strings
}, "|"))

// Redactor removes credentials from text. It is safe for concurrent use, and
// secrets can be added at run time (tokens minted after start).
type Redactor struct {
	mu      sync.RWMutex
	secrets []string
}

// NewRedactor returns a Redactor for the given exact values.
func NewRedactor(secrets []string) *Redactor {
	r := &Redactor{}
	r.Add(secrets...)
	return r
}

// Add registers more exact values to redact. Values shorter than 6
// characters are ignored.
func (r *Redactor) Add(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range secrets {
		if len(s) >= 6 {
			r.secrets = append(r.secrets, s)
		}
	}
	// Longest first, so a secret containing another is masked whole.
	for i := 1; i < len(r.secrets); i++ {
		for j := i; j > 0 && len(r.secrets[j]) > len(r.secrets[j-1]); j-- {
			r.secrets[j], r.secrets[j-1] = r.secrets[j-1], r.secrets[j]
		}
	}
}

// Redact returns s with every known secret and credential-shaped token
// replaced by [REDACTED].
func (r *Redactor) Redact(s string) string {
	r.mu.RLock()
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, mask)
		}
	}
	r.mu.RUnlock()
	return tokenShapes.ReplaceAllStringFunc(s, func(m string) string {
		if i := strings.IndexAny(m, "="); i >= 0 && (m[0] == '?' || m[0] == '&') {
			return m[:i+1] + mask
		}
		return mask
	})
}

var secretAttr = regexp.MustCompile(`(?i)(api_?key|token|secret|password|authorization|cookie)`)

// redactHandler masks secrets in the message and every string attribute, and
// masks attributes whose key names a credential outright.
type redactHandler struct {
	next slog.Handler
	r    *Redactor
}

func (h *redactHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.Redact(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	if secretAttr.MatchString(a.Key) && v.Kind() != slog.KindGroup {
		if v.Kind() == slog.KindString && v.String() == "" {
			return a
		}
		return slog.String(a.Key, mask)
	}
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.Redact(v.String()))
	case slog.KindGroup:
		attrs := v.Group()
		red := make([]any, len(attrs))
		for i, g := range attrs {
			red[i] = h.attr(g)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.r.Redact(err.Error()))
		}
		return slog.String(a.Key, h.r.Redact(fmt.Sprint(v.Any())))
	default:
		return slog.Attr{Key: a.Key, Value: v}
	}
}

func (h *redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.attr(a)
	}
	return &redactHandler{next: h.next.WithAttrs(red), r: h.r}
}

func (h *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{next: h.next.WithGroup(name), r: h.r}
}
