package mcp

import (
	"os"
	"path/filepath"

	"github.com/nanobot-go/nanobot/configs"
)

// serverPaths are the folders a confined stdio server gets besides the
// workspace: its working folder and the folders of the files its command
// line names (up to the node_modules or site-packages tree they sit in)
// read-only, and the package managers' caches under $HOME (npx, uvx, pip)
// read-write, so `npx -y some-server` works. The config folder, sessions
// and the rest of $HOME stay out of reach.
func serverPaths(cfg configs.MCPServerConfig, dir string) (ro, rw []string) {
	if dir != "" {
		ro = append(ro, dir)
	}
	for _, a := range append([]string{cfg.Command}, cfg.Args...) {
		if !filepath.IsAbs(a) {
			continue
		}
		if _, err := os.Stat(a); err != nil {
			continue
		}
		ro = append(ro, packageRoot(a))
	}
	if home, err := os.UserHomeDir(); err == nil {
		for _, d := range []string{".npm", ".cache", ".local/share/uv", ".local/lib", ".local/bin"} {
			rw = append(rw, filepath.Join(home, d))
		}
	}
	return ro, rw
}

// packageRoot is the folder above the outermost node_modules or
// site-packages folder on path (a package needs its siblings), or path's
// own folder.
func packageRoot(path string) string {
	root := filepath.Dir(path)
	for d := root; d != "/" && d != "."; d = filepath.Dir(d) {
		switch filepath.Base(d) {
		case "node_modules", "site-packages":
			root = filepath.Dir(d)
		}
	}
	return root
}
