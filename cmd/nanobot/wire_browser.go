package main

import (
	"errors"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/tools/browser"
	"github.com/nanobot-go/nanobot/tools/image"
)

// browserProfileDir is Chromium's profile folder inside the workspace.
const browserProfileDir = ".browser-profile"

// newBrowser builds the owner of the browser tool's Chromium when
// tools.browser is on and a Chromium is found; nil otherwise (`nanobot
// doctor` says why). Chromium itself starts on the tool's first use.
func (a *app) newBrowser() (*browser.Browser, error) {
	c := &a.loaded.Config
	bc := c.Tools.Browser
	if !bc.Enable {
		return nil, nil
	}
	bin, err := browser.Find(configs.ExpandHome(bc.ExecutablePath))
	if err != nil {
		if errors.Is(err, browser.ErrNoChromium) {
			a.log.Info("browser tool not offered: " + err.Error())
			return nil, nil
		}
		return nil, err // a configured path that is wrong is an error
	}
	return browser.New(browser.Options{
		ExecPath:    bin,
		ProfileDir:  filepath.Join(a.loaded.Paths.Workspace, browserProfileDir),
		OutDir:      filepath.Join(a.loaded.Paths.Media, image.GeneratedDir),
		Allow:       ssrfAllowlist(c),
		Visible:     !bc.Headless,
		IdleTimeout: time.Duration(bc.IdleTimeoutMinutes) * time.Minute,
		MaxTabs:     bc.MaxTabs,
		Logger:      a.log,
	})
}

// ssrfAllowlist is tools.ssrfAllowlist parsed (it was validated at load).
func ssrfAllowlist(c *configs.Config) []netip.Prefix {
	var allow []netip.Prefix
	for _, cidr := range c.Tools.SSRFAllowlist {
		if p, err := netip.ParsePrefix(cidr); err == nil {
			allow = append(allow, p)
		}
	}
	return allow
}
