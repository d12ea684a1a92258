// Package redact removes credentials from text: exact secret values (from
// the config, and tokens the program obtains at run time) and strings shaped
// like well-known credentials (sk-…, xox…, ghp_…, AIza…, Telegram bot
// tokens, "Bearer …", secret query parameters). The process logger, the
// channel adapters' error messages, tool results and the assistant's
// replies all go through one Redactor.
//
// Concurrency: a Redactor is safe for concurrent use; Add may be called
// while other goroutines redact. A nil *Redactor redacts nothing.
package redact

import (
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Mask replaces every secret found.
const Mask = "[REDACTED]"

// MinLen is the shortest value Add accepts: shorter ones would mangle
// ordinary text and protect nothing.
const MinLen = 6

// maxRuntime bounds the secrets added after New: tokens rotate for months,
// and only recent ones can still be in flight.
const maxRuntime = 64

// Redactor replaces secrets in text.
type Redactor struct {
	mu sync.RWMutex
	// fixed are New's secrets, runtime the most recent ones added since;
	// all is both, longest first, so a secret containing another is masked
	// whole.
	fixed, runtime, all []string
}

// New returns a Redactor for the given exact values (the config's secrets).
// Values shorter than MinLen are ignored.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		if len(s) >= MinLen && !slices.Contains(r.fixed, s) {
			r.fixed = append(r.fixed, s)
		}
	}
	r.rebuild()
	return r
}

// Keep registers values that stay secret for the life of the process (the
// instance's own access token): unlike Add's, they are never dropped.
func (r *Redactor) Keep(secrets ...string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range secrets {
		if len(s) >= MinLen && !slices.Contains(r.fixed, s) {
			r.fixed = append(r.fixed, s)
			r.runtime = slices.DeleteFunc(r.runtime, func(v string) bool { return v == s })
		}
	}
	r.rebuild()
}

// Add registers values learnt at run time (an access token just fetched).
// Values shorter than MinLen are ignored; of the values added after New,
// the most recent 64 are kept.
func (r *Redactor) Add(secrets ...string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := false
	for _, s := range secrets {
		if len(s) < MinLen || slices.Contains(r.fixed, s) || slices.Contains(r.runtime, s) {
			continue
		}
		r.runtime = append(r.runtime, s)
		changed = true
	}
	if !changed {
		return
	}
	if n := len(r.runtime); n > maxRuntime {
		r.runtime = slices.Clone(r.runtime[n-maxRuntime:])
	}
	r.rebuild()
}

func (r *Redactor) rebuild() {
	all := make([]string, 0, len(r.fixed)+len(r.runtime))
	all = append(all, r.fixed...)
	all = append(all, r.runtime...)
	slices.SortStableFunc(all, func(a, b string) int { return len(b) - len(a) })
	// Readers hold the old slice; never modify it in place.
	r.all = all
}

// MaxLen is the length of the longest exact secret (0 when there is none).
// A stream that must not leak a secret split across two chunks holds back
// MaxLen()-1 bytes (see Stream).
func (r *Redactor) MaxLen() int {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if len(r.all) == 0 {
		return 0
	}
	return len(r.all[0])
}

// String returns s with every known secret and credential-shaped token
// replaced by Mask. When s holds no candidate it is returned as is, without
// allocating.
func (r *Redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	return Shapes(r.Secrets(s))
}

// Secrets returns s with the exact secrets replaced, without looking for
// token shapes: for text where a shape would be a false alarm.
func (r *Redactor) Secrets(s string) string {
	if r == nil || s == "" {
		return s
	}
	r.mu.RLock()
	secrets := r.all
	r.mu.RUnlock()
	for _, sec := range secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, Mask)
		}
	}
	return s
}

// Error returns err's message redacted ("" for a nil error).
func (r *Redactor) Error(err error) string {
	if err == nil {
		return ""
	}
	return r.String(err.Error())
}

// tokenShapes match well-known credential formats even when their values
// are not configured (keys pasted into a chat, tokens in URLs).
var tokenShapes = regexp.MustCompile(strings.Join([]string{
	`sk-[A-Za-z0-9_\-]{16,}`,                 // OpenAI, DeepSeek, Anthropic (sk-ant-...)
	`xox[abprs]-[A-Za-z0-9\-]{10,}`,          // Slack bot/user tokens
	`xapp-[A-Za-z0-9\-]{10,}`,                // Slack app tokens
	`gh[pousr]_[A-Za-z0-9]{20,}`,             // GitHub tokens
	`AIza[0-9A-Za-z_\-]{30,}`,                // Google API keys
	`\b[0-9]{8,10}:[A-Za-z0-9_\-]{35}\b`,     // Telegram bot tokens
	`(?i)bot[0-9]{8,10}:[A-Za-z0-9_\-]{35}`,  // Telegram API URLs (/bot<token>/)
	`(?i)bearer\s+[A-Za-z0-9._~+/\-]{12,}=*`, // Authorization headers
	`(?i)[?&](?:[a-z_]*(?:api_?key|token|secret|password)|key|sig|signature)=[^&\s"]+`, // secrets in query strings
}, "|"))

// Shapes replaces credential-shaped tokens in s. It scans s once for the
// few bytes every shape starts with and returns s untouched when none is
// there; only then does it run the regular expression.
func Shapes(s string) string {
	if !mayHoldShape(s) {
		return s
	}
	return tokenShapes.ReplaceAllStringFunc(s, func(m string) string {
		if m[0] == '?' || m[0] == '&' {
			if i := strings.IndexByte(m, '='); i >= 0 {
				return m[:i+1] + Mask
			}
		}
		return Mask
	})
}

// mayHoldShape reports whether s could hold a token shape: the cheap
// necessary conditions of each alternative of tokenShapes.
func mayHoldShape(s string) bool {
	return strings.Contains(s, "sk-") ||
		strings.Contains(s, "xox") ||
		strings.Contains(s, "xapp-") ||
		strings.Contains(s, "AIza") ||
		hasGitHubPrefix(s) ||
		hasDigitsColon(s) ||
		containsFold(s, "bearer") ||
		strings.IndexByte(s, '=') >= 0 && (strings.IndexByte(s, '?') >= 0 || strings.IndexByte(s, '&') >= 0)
}

// hasGitHubPrefix looks for "gh" followed by p, o, u, s or r and "_".
func hasGitHubPrefix(s string) bool {
	for {
		i := strings.Index(s, "gh")
		if i < 0 || i+3 >= len(s) {
			return false
		}
		if strings.IndexByte("pousr", s[i+2]) >= 0 && s[i+3] == '_' {
			return true
		}
		s = s[i+2:]
	}
}

// hasDigitsColon looks for eight digits followed by a colon (a Telegram bot
// token's id part).
func hasDigitsColon(s string) bool {
	for {
		i := strings.IndexByte(s, ':')
		if i < 0 {
			return false
		}
		if i >= 8 {
			n := 0
			for j := i - 1; j >= 0 && s[j] >= '0' && s[j] <= '9'; j-- {
				n++
			}
			if n >= 8 {
				return true
			}
		}
		s = s[i+1:]
	}
}

// containsFold reports whether s contains lower (ASCII, lower case) in any
// case, without allocating.
func containsFold(s, lower string) bool {
	first := lower[0]
	upper := first - 'a' + 'A'
	for i := 0; i+len(lower) <= len(s); i++ {
		if c := s[i]; c != first && c != upper {
			continue
		}
		if strings.EqualFold(s[i:i+len(lower)], lower) {
			return true
		}
	}
	return false
}

// Stream redacts the exact secrets from a text that arrives in pieces
// (streamed model output), where one secret may be split across pieces: it
// holds back the last MaxLen()-1 bytes until the next piece shows whether
// they start a secret. Concatenating everything Next and Flush return gives
// r.Secrets of the whole text. A Stream is used by one goroutine.
type Stream struct {
	r    *Redactor
	held string
}

// Stream starts a Stream over r (a nil r passes text through).
func (r *Redactor) Stream() *Stream { return &Stream{r: r} }

// Next takes the next piece and returns the text that is safe to emit now
// (possibly "").
func (s *Stream) Next(piece string) string {
	hold := s.r.MaxLen() - 1
	if hold <= 0 {
		out := s.r.Secrets(s.held + piece)
		s.held = ""
		return out
	}
	red := s.r.Secrets(s.held + piece)
	cut := len(red) - hold
	if cut <= 0 {
		s.held = red
		return ""
	}
	// Never split a UTF-8 character between what is emitted and what is
	// held.
	for cut > 0 && !utf8.RuneStart(red[cut]) {
		cut--
	}
	s.held = red[cut:]
	return red[:cut]
}

// Flush returns what is still held, redacted, and resets the Stream.
func (s *Stream) Flush() string {
	out := s.r.Secrets(s.held)
	s.held = ""
	return out
}
