package mcp

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/nanobot-go/nanobot/configs"
)

// serverPaths are the folders a confined stdio server gets besides the
// workspace: read-only, its working folder, the folders its command line
// names and the package trees (node_modules, site-packages) of the files
// it names; read-write, the package managers' caches under $HOME (npx,
// uvx, pip), so `npx -y some-server` works. A folder that holds the config
// folder (/, /home, $HOME) is never granted this way: the keys, sessions
// and the rest of $HOME stay out of reach unless tools.exec.allowPaths
// says otherwise.
func serverPaths(cfg configs.MCPServerConfig, dir string) (ro, rw []string) {
	home, _ := os.UserHomeDir()
	safe := func(p string) bool {
		if home == "" {
			return p != "/"
		}
		cfgDir := filepath.Join(home, ".nanobot")
		return p != cfgDir && !strings.HasPrefix(cfgDir+"/", strings.TrimSuffix(p, "/")+"/")
	}
	if dir != "" && safe(dir) {
		ro = append(ro, dir)
	}
	for _, a := range append([]string{cfg.Command}, cfg.Args...) {
		if !filepath.IsAbs(a) {
			continue
		}
		st, err := os.Stat(a)
		if err != nil {
			continue
		}
		p := a
		if !st.IsDir() {
			p = packageRoot(a)
		}
		if safe(p) {
			ro = append(ro, p)
		}
	}
	if home != "" {
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
