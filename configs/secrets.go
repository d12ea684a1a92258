package configs

import (
	"net/url"
	"reflect"
	"regexp"
	"sort"
	"strings"
)

// secretKey matches the names of fields that hold credentials.
var secretKey = regexp.MustCompile(`(?i)(api_?key|token|secret|password|passwd|credential|authorization|cookie|private_?key|app_?key|access_?key|nkey|aes_?key)`)

// IsSecretKey reports whether a config or header key names a credential.
func IsSecretKey(k string) bool { return secretKey.MatchString(k) }

// secretQueryKeys are query parameters that carry credentials although
// IsSecretKey does not match their names (Azure Functions' code, SAS
// signatures, plain key and auth).
var secretQueryKeys = map[string]bool{"key": true, "code": true, "sig": true, "signature": true, "auth": true, "pass": true, "pwd": true}

// urlSecrets returns the credentials inside s if it is a URL: the
// password of its user info and the values of query parameters named like
// credentials (an MCP server's or a webhook's URL often carries its key
// that way).
func urlSecrets(s string) []string {
	if !strings.Contains(s, "://") {
		return nil
	}
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return nil
	}
	var out []string
	if p, ok := u.User.Password(); ok {
		out = append(out, p)
	}
	for k, vs := range u.Query() {
		if IsSecretKey(k) || secretQueryKeys[strings.ToLower(k)] {
			out = append(out, vs...)
		}
	}
	return out
}

// Secrets returns every credential value in the config (provider keys,
// channel tokens, secret headers, MCP env values named like secrets, and
// the passwords and credential query parameters of URLs), longest
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
			s := v.String()
			if len(s) >= 6 && IsSecretKey(key) {
				seen[s] = true
			}
			for _, u := range urlSecrets(s) {
				if len(u) >= 6 {
					seen[u] = true
				}
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
