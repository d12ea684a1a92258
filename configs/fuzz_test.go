package configs

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to Load as a config file: it must return a
// config or an *Error, never panic.
func FuzzLoad(f *testing.F) {
	f.Add(Example)
	f.Add([]byte(`{"channels": {"telegram": {"allowFrom": ["a", 1]}}}`))
	f.Add([]byte(`{"tools": {"mcpServers": {"x": {"url": "http://a", "enabledTools": []}}}}`))
	f.Add([]byte(`{"agents": {"defaults": {"max_tokens": 1e3, "model": "${X:-y}"}}}`))
	f.Add([]byte(`{"heartbeat": 1, "tools": {"exec": []}}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "config.json")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := Load(Options{Path: p, Environ: []string{"X=1"}})
		if err == nil {
			if _, ok := any(l).(*Loaded); !ok || l == nil {
				t.Fatal("nil config without error")
			}
			return
		}
		if _, ok := err.(*Error); !ok {
			t.Fatalf("error of type %T: %v", err, err)
		}
	})
}
