package kit

import (
	"strings"
	"sync"
)

// Redactor replaces known secrets (app secrets, tokens obtained at run
// time) in text meant for logs, errors and health. Secrets shorter than 4
// bytes are ignored: they would mangle ordinary text and protect nothing.
// It is safe for concurrent use; a nil Redactor changes nothing.
type Redactor struct {
	mu      sync.RWMutex
	secrets []string
	r       *strings.Replacer
}

// NewRedactor returns a Redactor for the given secrets.
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{}
	r.Add(secrets...)
	return r
}

// Add registers more secrets, such as an access token just fetched. At most
// the 32 most recent secrets are kept (tokens rotate for months).
func (r *Redactor) Add(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range secrets {
		if len(s) < 4 || contains(r.secrets, s) {
			continue
		}
		r.secrets = append(r.secrets, s)
	}
	if n := len(r.secrets); n > 32 {
		r.secrets = append([]string(nil), r.secrets[n-32:]...)
	}
	pairs := make([]string, 0, 2*len(r.secrets))
	for _, s := range r.secrets {
		pairs = append(pairs, s, "***")
	}
	r.r = strings.NewReplacer(pairs...)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// String redacts s.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	r.mu.RLock()
	rep := r.r
	r.mu.RUnlock()
	if rep == nil {
		return s
	}
	return rep.Replace(s)
}

// Error redacts err's message ("" for nil).
func (r *Redactor) Error(err error) string {
	if err == nil {
		return ""
	}
	return r.String(err.Error())
}
