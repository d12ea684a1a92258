package sandbox

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseHelper(t *testing.T) {
	c, err := parseHelper([]string{"--mode=bwrap", "--ro=/a", "--ro", "/b", "--rw=/c/../d", "--no-network", "--cpu=5", "--mem=100", "--nproc=9", "--fsize=2", "--", "prog", "-x", "--", "y"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := helperConfig{mode: ModeBwrap, ro: []string{"/a", "/b"}, rw: []string{"/d"}, noNetwork: true, limits: Limits{5, 100, 9, 2}, bwrap: "bwrap", argv: []string{"prog", "-x", "--", "y"}}
	if c.mode != want.mode || !slices.Equal(c.ro, want.ro) || !slices.Equal(c.rw, want.rw) || c.noNetwork != want.noNetwork || c.limits != want.limits || !slices.Equal(c.argv, want.argv) {
		t.Errorf("parseHelper = %+v, want %+v", c, want)
	}
	for _, bad := range [][]string{
		{"--", ""}, {"--ro=/a"}, {"--mode=docker", "--", "x"}, {"--cpu=-1", "--", "x"}, {"--nope", "--", "x"},
	} {
		if _, err := parseHelper(bad, io.Discard); err == nil {
			t.Errorf("parseHelper(%q): want error", bad)
		}
	}
}

func TestBwrapArgs(t *testing.T) {
	ws := t.TempDir()
	for _, noNet := range []bool{false, true} {
		a := bwrapArgs("/usr/bin/bwrap", helperConfig{rw: []string{ws}, ro: []string{"/no/such/dir"}, noNetwork: noNet, argv: []string{"/bin/sh", "-c", "x"}}, ws)
		s := strings.Join(a, " ")
		for _, want := range []string{"--die-with-parent", "--new-session", "--unshare-pid", "--cap-drop ALL", "--tmpfs /tmp", "--bind " + ws + " " + ws, "--chdir " + ws + " -- /bin/sh -c x"} {
			if !strings.Contains(s, want) {
				t.Errorf("args lack %q: %s", want, s)
			}
		}
		if strings.Contains(s, "/no/such/dir") {
			t.Errorf("missing folder bound: %s", s)
		}
		if strings.Contains(s, "--unshare-net") != noNet {
			t.Errorf("noNetwork=%v but args %s", noNet, s)
		}
		if strings.Contains(s, "/etc/shadow") {
			t.Errorf("/etc/shadow bound: %s", s)
		}
	}
}

func TestExpandMinus(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"etc/passwd", "etc/shadow", "etc/ssh/ssh_config", "etc/ssh/ssh_host_ed25519_key", "etc/ssl/certs/ca.pem", "etc/ssl/private/k.pem"} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	etc := filepath.Join(root, "etc")
	secrets := []string{etc + "/shadow*", etc + "/ssh/ssh_host_*key*", etc + "/ssl/private"}
	got := expandMinus(etc, secrets)
	want := []string{etc + "/passwd", etc + "/ssh/ssh_config", etc + "/ssl/certs"}
	if !slices.Equal(got, want) {
		t.Errorf("expandMinus = %v, want %v", got, want)
	}
}

func TestSupportBest(t *testing.T) {
	tests := []struct {
		s    Support
		best Mode
	}{
		{Support{LandlockABI: 7, Bwrap: "/usr/bin/bwrap", Helper: "/x"}, ModeLandlock},
		{Support{Bwrap: "/usr/bin/bwrap", Helper: "/x"}, ModeBwrap},
		{Support{Helper: "/x"}, ModeNone},
		{Support{LandlockABI: 7}, ModeNone},
	}
	for _, tt := range tests {
		if got := tt.s.Best(); got != tt.best {
			t.Errorf("%+v.Best() = %q, want %q", tt.s, got, tt.best)
		}
	}
	s := Support{LandlockNote: "off at boot", BwrapNote: "not installed", Helper: "/x"}
	if why := s.available(ModeLandlock); !strings.Contains(why, "off at boot") {
		t.Errorf("available(landlock) = %q", why)
	}
	if why := s.available(ModeBwrap); !strings.Contains(why, "not installed") {
		t.Errorf("available(bwrap) = %q", why)
	}
	if got := (Support{LandlockABI: 9}).AppliedLandlockABI(); got != LandlockTargetABI {
		t.Errorf("AppliedLandlockABI = %d, want %d", got, LandlockTargetABI)
	}
}
