package configs

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// envRef matches ${NAME} and ${NAME:-fallback}; "$${" escapes a literal "${".
var envRef = regexp.MustCompile(`\$?\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`)

// expandEnv replaces ${VAR} in every string of the tree (in place) using
// lookup. It returns the original text of each string it changed, keyed by
// JSON path, so Save can write the reference back instead of the secret.
func expandEnv(tree map[string]any, lookup func(string) (string, bool)) (map[string]string, []FieldError) {
	orig := map[string]string{}
	var errs []FieldError
	var walk func(path string, v any) any
	walk = func(path string, v any) any {
		switch x := v.(type) {
		case string:
			if !strings.Contains(x, "${") {
				return x
			}
			out := envRef.ReplaceAllStringFunc(x, func(ref string) string {
				if strings.HasPrefix(ref, "$$") {
					return ref[1:]
				}
				sub := envRef.FindStringSubmatch(ref)
				name, fallback := sub[1], sub[2]
				val, ok := lookup(name)
				if (!ok || val == "") && fallback != "" {
					return fallback[2:]
				}
				if !ok {
					errs = append(errs, FieldError{Path: path, Msg: fmt.Sprintf("environment variable %s is not set", name)})
				}
				return val
			})
			if out != x {
				orig[path] = x
			}
			return out
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				x[k] = walk(join(path, k), x[k])
			}
			return x
		case []any:
			for i := range x {
				x[i] = walk(fmt.Sprintf("%s[%d]", path, i), x[i])
			}
			return x
		default:
			return v
		}
	}
	walk("", tree)
	return orig, errs
}
