package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestEntriesExcept(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"etc/passwd", "etc/shadow", "etc/shadow-", "etc/ssh/ssh_config", "etc/ssh/ssh_host_ed25519_key", "etc/ssh/ssh_host_ed25519_key.pub", "etc/ssl/certs/ca.pem", "etc/ssl/private/k.pem"} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	etc := filepath.Join(root, "etc")
	got := entriesExcept(etc, []string{etc + "/shadow*", etc + "/ssh/ssh_host_*key*", etc + "/ssl/private"})
	want := []string{etc + "/passwd", etc + "/ssh/ssh_config", etc + "/ssl/certs"}
	if !slices.Equal(got, want) {
		t.Errorf("entriesExcept = %v, want %v", got, want)
	}
}
