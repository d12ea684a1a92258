package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// etcSecrets are patterns (filepath.Match) of the /etc paths a confined
// child never reads, even when the gateway runs as root and owns them:
// password hashes, sudo rules, the host's SSH keys, TLS private keys.
var etcSecrets = []string{
	"/etc/shadow*", "/etc/gshadow*", "/etc/sudoers*", "/etc/ssh/ssh_host_*key*",
	"/etc/ssl/private", "/etc/security/opasswd", "/etc/credstore*",
}

// etcEntries lists what a Landlock rule may grant of /etc: its entries,
// the folders that hold a secret opened one level deeper, the secrets left
// out.
func etcEntries() []string { return entriesExcept("/etc", etcSecrets) }

func entriesExcept(dir string, secrets []string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		secret, holds := false, false
		for _, pat := range secrets {
			if ok, _ := filepath.Match(pat, p); ok {
				secret = true
			}
			if strings.HasPrefix(pat, p+"/") {
				holds = true
			}
		}
		switch {
		case secret:
		case holds && e.IsDir():
			out = append(out, entriesExcept(p, secrets)...)
		default:
			out = append(out, p)
		}
	}
	return out
}

// etcSecretPaths are the secrets present on this host, for bubblewrap to
// hide under /etc after binding it whole.
func etcSecretPaths() []string {
	var out []string
	for _, pat := range etcSecrets {
		m, _ := filepath.Glob(pat)
		out = append(out, m...)
	}
	return out
}

// withoutEtcSecrets replaces /etc in a list of read-only paths by its
// entries minus the secrets.
func withoutEtcSecrets(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if p == "/etc" {
			out = append(out, etcEntries()...)
			continue
		}
		out = append(out, p)
	}
	return out
}
