package sandbox

import (
	"os"
	"strings"
)

// passThrough are copied from the gateway's environment into every child:
// enough to find programs and get locale, terminal and time zone right,
// nothing that carries credentials.
var passThrough = []string{"PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TERM", "TZ", "USER", "LOGNAME", "SHELL", "TMPDIR"}

// defaultPath is used when the gateway itself runs without PATH.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// BaseEnv returns the minimal environment for a child: the pass-through
// variables that are set, PATH (a default when unset), HOME=home (the
// gateway's HOME when home is empty) and extra. Each extra entry is "KEY"
// (copied from the gateway when set) or "KEY=value"; later entries win.
// Nothing else reaches the child, in particular no provider API keys.
func BaseEnv(home string, extra ...string) []string {
	env := make([]string, 0, len(passThrough)+len(extra)+2)
	for _, k := range passThrough {
		if v, ok := os.LookupEnv(k); ok {
			env = SetEnv(env, k, v)
		}
	}
	if !hasKey(env, "PATH") {
		env = SetEnv(env, "PATH", defaultPath)
	}
	if home == "" {
		home = os.Getenv("HOME")
	}
	if home != "" {
		env = SetEnv(env, "HOME", home)
	}
	for _, e := range extra {
		k, v, hasValue := strings.Cut(strings.TrimSpace(e), "=")
		if k == "" {
			continue
		}
		if !hasValue {
			var ok bool
			if v, ok = os.LookupEnv(k); !ok {
				continue
			}
		}
		env = SetEnv(env, k, v)
	}
	return env
}

// SetEnv returns env with key set to value, replacing an earlier entry.
func SetEnv(env []string, key, value string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

func hasKey(env []string, key string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			return true
		}
	}
	return false
}
