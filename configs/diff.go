package configs

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
)

// Diff returns the settings that differ between a and b, as dotted paths
// of their JSON keys ("channels.telegram.allowFrom",
// "agents.defaults.model"), sorted. Objects are compared key by key;
// anything else (a list, a number, a string) is one setting. It reports
// where, never what: values (secrets among them) are not in the result.
func Diff(a, b *Config) []string {
	var out []string
	diffJSON("", toJSON(a), toJSON(b), &out)
	slices.Sort(out)
	return out
}

func toJSON(c *Config) any {
	raw, err := json.Marshal(c)
	if err != nil {
		return nil // a Config always encodes; nil compares unequal to the other
	}
	var v any
	_ = json.Unmarshal(raw, &v)
	return v
}

func diffJSON(path string, a, b any, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, path)
		}
		return
	}
	for k, av := range am {
		diffJSON(join(path, k), av, bm[k], out)
	}
	for k, bv := range bm {
		if _, seen := am[k]; !seen {
			diffJSON(join(path, k), nil, bv, out)
		}
	}
}

// MatchSetting reports whether setting (a Diff path) is pattern, where a
// "*" segment of pattern matches any one segment
// ("channels.*.allowFrom").
func MatchSetting(pattern, setting string) bool {
	p, s := strings.Split(pattern, "."), strings.Split(setting, ".")
	if len(p) != len(s) {
		return false
	}
	for i := range p {
		if p[i] != "*" && p[i] != s[i] {
			return false
		}
	}
	return true
}
