package main

import (
	"errors"
	"os"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/tools/browser"
)

// diagnoseBrowser says whether the browser tool is offered, and why not.
func diagnoseBrowser(c *configs.Config) []finding {
	bc := c.Tools.Browser
	if !bc.Enable {
		return nil
	}
	bin, err := browser.Find(configs.ExpandHome(bc.ExecutablePath))
	switch {
	case errors.Is(err, browser.ErrNoChromium):
		return []finding{{"warn", "the browser tool is not offered: " + err.Error(), "install Chromium (apt install chromium), set tools.browser.executablePath, or set tools.browser.enable to false"}}
	case err != nil:
		return []finding{{"risk", err.Error() + ": the gateway will not start", "fix tools.browser.executablePath or leave it empty to look on PATH"}}
	}
	out := []finding{{"ok", "the browser tool runs " + bin + " (started on first use; profile in the workspace's " + browserProfileDir + ")", ""}}
	if os.Geteuid() == 0 {
		out = append(out, finding{"warn", "the gateway runs as root, so Chromium runs without its own sandbox (--no-sandbox): a browser exploit gets the gateway's rights", "run the gateway as an ordinary user (the systemd unit and the Docker image do)"})
	}
	return out
}
