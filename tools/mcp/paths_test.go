package mcp

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestStdioReadable(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	pkg := filepath.Join(home, "srv", "node_modules", "@x", "server", "dist")
	prefix := filepath.Join(home, "tools")
	for _, d := range []string{pkg, filepath.Join(prefix, "bin"), filepath.Join(home, "bin"), filepath.Join(home, "node_modules", "y")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(prefix, "bin", "mytool"), filepath.Join(home, "bin", "other"), filepath.Join(pkg, "index.js"), filepath.Join(home, "node_modules", "y", "i.js")} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		command string
		dir     string
		args    []string
		want    []string
	}{
		{"install prefix above bin", filepath.Join(prefix, "bin", "mytool"), "", nil, []string{prefix}},
		{"never all of home", filepath.Join(home, "bin", "other"), "", nil, []string{filepath.Join(home, "bin")}},
		{"package root of a script", "sh", "/srv", []string{filepath.Join(pkg, "index.js"), "relative", "/no/such"}, []string{"/usr", "/srv", filepath.Join(home, "srv")}},
		{"node_modules in home", "sh", "", []string{filepath.Join(home, "node_modules", "y", "i.js")}, []string{"/usr", filepath.Join(home, "node_modules", "y")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := stdioReadable(tt.command, tt.dir, tt.args)
			// sh lives in /usr/bin or /bin depending on the distribution.
			if len(got) > 0 && (got[0] == "/" || got[0] == "/bin") {
				got[0] = "/usr"
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("stdioReadable = %v, want %v", got, tt.want)
			}
		})
	}
}
