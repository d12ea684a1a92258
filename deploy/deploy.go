// Package deploy holds the deployment files (systemd unit, compose files)
// and renders the systemd unit for `nanobot gateway install-service`.
package deploy

import (
	_ "embed"
	"fmt"
	"strings"
)

//go:embed nanobot.service
var systemUnit string

// UnitOptions describe where the service runs.
type UnitOptions struct {
	// Binary is the absolute path of the nanobot binary.
	Binary string
	// Config is the absolute path of config.json.
	Config string
	// DataDir is the config's folder, the only place the service writes.
	DataDir string
	// User scope installs for the current user (~/.config/systemd/user)
	// without User=/Group= lines.
	User bool
	// RunAs is the system user for a system-scope unit.
	RunAs string
}

// Unit renders the hardened systemd unit.
func Unit(o UnitOptions) (string, error) {
	for name, v := range map[string]string{"binary": o.Binary, "config": o.Config, "data folder": o.DataDir} {
		if !strings.HasPrefix(v, "/") {
			return "", fmt.Errorf("%s must be an absolute path, got %q", name, v)
		}
		if strings.ContainsAny(v, " \n\"'\\") {
			return "", fmt.Errorf("%s path %q contains characters systemd would misread", name, v)
		}
	}
	u := systemUnit
	u = strings.Replace(u, "ExecStart=/usr/local/bin/nanobot gateway --config /var/lib/nanobot/config.json", "ExecStart="+o.Binary+" gateway --config "+o.Config, 1)
	u = strings.Replace(u, "ReadWritePaths=/var/lib/nanobot", "ReadWritePaths="+o.DataDir, 1)
	// The template's own comment (how to install it by hand) is replaced
	// by what to do with the unit this wrote.
	_, body, _ := strings.Cut(u, "[Unit]")
	out := []string{"# systemd unit for the nanobot gateway (system scope), written by `nanobot gateway install-service`.",
		"# Then: systemctl daemon-reload && systemctl enable --now nanobot"}
	if o.User {
		out = []string{"# systemd user unit for the nanobot gateway, written by `nanobot gateway install-service --user`.",
			"# Then: systemctl --user daemon-reload && systemctl --user enable --now nanobot",
			"# (loginctl enable-linger $USER keeps it running while you are logged out)"}
	}
	for _, line := range strings.Split("[Unit]"+body, "\n") {
		switch {
		case o.User && (strings.HasPrefix(line, "User=") || strings.HasPrefix(line, "Group=") || strings.HasPrefix(line, "StateDirectory") || strings.HasPrefix(line, "ProtectHome=") || strings.HasPrefix(line, "PrivateDevices=") || strings.HasPrefix(line, "Protect") && strings.Contains(line, "Kernel")):
			continue // not available to user managers
		case o.User && line == "WantedBy=multi-user.target":
			line = "WantedBy=default.target"
		case !o.User && strings.HasPrefix(line, "User="):
			line = "User=" + o.RunAs
		case !o.User && strings.HasPrefix(line, "Group="):
			line = "Group=" + o.RunAs
		case !o.User && strings.HasPrefix(line, "StateDirectory=") && o.DataDir != "/var/lib/nanobot":
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n"), nil
}
