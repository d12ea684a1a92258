package deploy

import (
	"strings"
	"testing"
)

func TestUnit(t *testing.T) {
	sys, err := Unit(UnitOptions{Binary: "/usr/local/bin/nanobot", Config: "/srv/nb/config.json", DataDir: "/srv/nb", RunAs: "bot"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ExecStart=/usr/local/bin/nanobot gateway --config /srv/nb/config.json", "ReadWritePaths=/srv/nb", "User=bot", "Restart=always", "NoNewPrivileges=yes", "ProtectSystem=strict", "PrivateTmp=yes"} {
		if !strings.Contains(sys, want) {
			t.Errorf("system unit lacks %q", want)
		}
	}
	user, err := Unit(UnitOptions{Binary: "/home/me/bin/nanobot", Config: "/home/me/.nanobot/config.json", DataDir: "/home/me/.nanobot", User: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(user, "User=") || strings.Contains(user, "ProtectHome") || !strings.Contains(user, "WantedBy=default.target") ||
		strings.Contains(user, "system scope") || strings.Contains(user, "/etc/systemd") || !strings.Contains(user, "systemctl --user enable --now nanobot") {
		t.Errorf("user unit:\n%s", user)
	}
	if _, err := Unit(UnitOptions{Binary: "nanobot", Config: "/c", DataDir: "/d"}); err == nil {
		t.Error("relative binary accepted")
	}
}
