package channels

import (
	"fmt"
	"net/url"
	"slices"
)

// CheckURL validates a URL option of a channel's config: it must parse, name
// a host and use one of schemes (default http and https). The error names
// the key ("apiBase: \"x\" is not an http(s) URL").
func CheckURL(key, value string, schemes ...string) error {
	if len(schemes) == 0 {
		schemes = []string{"http", "https"}
	}
	if u, err := url.Parse(value); err == nil && u.Host != "" && slices.Contains(schemes, u.Scheme) {
		return nil
	}
	kind := schemes[0] + "(s)"
	if len(schemes) != 2 || schemes[1] != schemes[0]+"s" {
		kind = fmt.Sprint(schemes)
	}
	article := "a"
	if kind[0] == 'h' {
		article = "an"
	}
	return fmt.Errorf("%s: %q is not %s %s URL", key, value, article, kind)
}
