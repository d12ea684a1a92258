package channels

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// GroupConfig holds the groupPolicy and groupAllowFrom keys of every platform
// that has group chats. Adapters embed it in their Config, so the keys stay
// at the top of channels.<name> (encoding/json and the config checker
// flatten embedded structs); what "addressed" means and what the
// allowlisted ids are is said in each adapter's package doc.
type GroupConfig struct {
	// GroupPolicy is "mention" (the default: group messages that address
	// the bot), "open" (every group message) or "allowlist" (every message
	// of the GroupAllowFrom groups, none elsewhere). Direct chats are not
	// affected.
	GroupPolicy GroupPolicy `json:"groupPolicy"`
	// GroupAllowFrom are the group ids of the allowlist policy, as the
	// platform spells them.
	GroupAllowFrom []string `json:"groupAllowFrom"`
}

// Check validates the pair (see GroupPolicy.Check); the errors name the keys.
func (g GroupConfig) Check() error { return g.GroupPolicy.Check("groupAllowFrom", g.GroupAllowFrom) }

// Problems collects what is wrong with a channel's config, so that Validate
// reports every problem at once. The messages name the JSON key under
// channels.<name> (the registry adds that prefix) and must never quote a
// secret. The zero value is ready to use; it is not safe for concurrent use.
type Problems struct {
	errs []error
}

// Add records err; nil is ignored.
func (p *Problems) Add(err error) {
	if err != nil {
		p.errs = append(p.errs, err)
	}
}

// Addf records a problem built like fmt.Errorf.
func (p *Problems) Addf(format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf(format, args...))
}

// Required records msg when value is empty or only white space. msg names
// the key and says where the value comes from; it is shown as is.
func (p *Problems) Required(value, msg string) {
	if strings.TrimSpace(value) == "" {
		p.errs = append(p.errs, errors.New(msg))
	}
}

// URL records CheckURL's complaint about key's value.
func (p *Problems) URL(key, value string, schemes ...string) {
	p.Add(CheckURL(key, value, schemes...))
}

// NonNegative records a problem when key's value n is below zero.
func (p *Problems) NonNegative(key string, n int64) {
	if n < 0 {
		p.errs = append(p.errs, fmt.Errorf("%s: must not be negative", key))
	}
}

// OneOf records a problem when key's value is none of allowed
// (`mode: "x" is not "forward" or "reverse"`).
func (p *Problems) OneOf(key, value string, allowed ...string) {
	if slices.Contains(allowed, value) {
		return
	}
	quoted := make([]string, len(allowed))
	for i, a := range allowed {
		quoted[i] = strconv.Quote(a)
	}
	list := quoted[len(quoted)-1]
	if len(quoted) > 1 {
		list = strings.Join(quoted[:len(quoted)-1], ", ") + " or " + list
	}
	p.Addf("%s: %q is not %s", key, value, list)
}

// Path records a problem when key's value is not a URL path the gateway's
// HTTP server can mount (it starts with / and holds no space or brace).
func (p *Problems) Path(key, value string) {
	if !strings.HasPrefix(value, "/") || strings.ContainsAny(value, " {}") {
		p.Addf("%s: %q must be a path starting with /", key, value)
	}
}

// Err is every recorded problem joined (errors.Join), or nil.
func (p *Problems) Err() error { return errors.Join(p.errs...) }

// FillDefaults sets every string and number field of *cfg that is zero to
// the same field of def, descending into embedded structs (GroupConfig). It
// is for an adapter's New, which is also called with hand-made configs that
// did not go through the loader (that one decodes config.json over the
// defaults already). Booleans, pointers, slices, maps and named struct
// fields are left alone: their zero value is a setting of its own. Fields
// whose empty value means something (an empty reactEmoji turns reactions
// off) are listed in keep by their Go name and left alone too. cfg must be
// a pointer to a struct of def's type.
func FillDefaults[C any](cfg *C, def C, keep ...string) {
	fillZero(reflect.ValueOf(cfg).Elem(), reflect.ValueOf(def), keep)
}

func fillZero(dst, def reflect.Value, keep []string) {
	t := dst.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || slices.Contains(keep, f.Name) {
			continue
		}
		d := dst.Field(i)
		switch d.Kind() {
		case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
			if d.IsZero() {
				d.Set(def.Field(i))
			}
		case reflect.Struct:
			if f.Anonymous {
				fillZero(d, def.Field(i), keep)
			}
		}
	}
}

// Logger is d.Log, or a logger that drops everything when it is nil (tests
// that do not care).
func (d Deps) Logger() *slog.Logger {
	if d.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Log
}

// MediaDir is the folder where the named platform saves downloaded
// attachments, or "" when the instance keeps no media (they are then not
// downloaded).
func (d Deps) MediaDir(platform string) string {
	if d.Paths.Media == "" {
		return ""
	}
	return filepath.Join(d.Paths.Media, platform)
}
