package configs

import (
	"reflect"
	"regexp"
	"sort"
	"strings"
)

// secretKey matches the names of fields that hold credentials.
var secretKey = regexp.MustCompile(`(?i)(api_?key|token|secret|password|passwd|credential|authorization|cookie|private_?key|app_?key|access_?key|nkey|aes_?key)`)

// IsSecretKey reports whether a config or header key names a credential.
func IsSecretKey(k string) bool { return secretKey.MatchString(k) }

// Secrets returns every credential value in the config (provider keys,
// channel tokens, secret headers, MCP env values named like secrets), longest
// first, for log redaction. Values shorter than 6 characters are skipped: they
// are not secrets anyone can use, and redacting them would garble logs.
func (c *Config) Secrets() []string {
	seen := map[string]bool{}
	var walk func(key string, v reflect.Value)
	walk = func(key string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(key, v.Elem())
			}
		case reflect.Struct:
			t := v.Type()
			for i := range t.NumField() {
				f := t.Field(i)
				if !f.IsExported() {
					continue
				}
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				if name == "" || name == "-" {
					name = f.Name
				}
				walk(name, v.Field(i))
			}
		case reflect.Map:
			for _, k := range v.MapKeys() {
				walk(k.String(), v.MapIndex(k))
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(key, v.Index(i))
			}
		case reflect.String:
			if s := v.String(); len(s) >= 6 && IsSecretKey(key) {
				seen[s] = true
			}
		}
	}
	walk("", reflect.ValueOf(c))
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}
