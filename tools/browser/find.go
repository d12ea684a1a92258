package browser

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Candidates are the names Find looks for on PATH, in order.
var Candidates = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"}

// ErrNoChromium is returned by Find when no browser is installed.
var ErrNoChromium = errors.New("no Chromium found on PATH (looked for " + strings.Join(Candidates, ", ") + ")")

// Find returns the Chromium binary to run: configured when it is set (it
// must exist), otherwise the first of Candidates on PATH. The error says
// what was looked for, for `nanobot doctor`.
func Find(configured string) (string, error) {
	if configured != "" {
		p, err := exec.LookPath(configured)
		if err != nil {
			return "", fmt.Errorf("tools.browser.executablePath %q: %w", configured, err)
		}
		return p, nil
	}
	for _, name := range Candidates {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}

// runningAsRoot reports whether Chromium would refuse to start with its
// own sandbox (it does as root); see Options.NoSandbox.
func runningAsRoot() bool { return os.Geteuid() == 0 }
