package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The default build has every platform, each with its typed config, and
// every adapter a build tag can leave out is registered by its own file.
func TestEveryPlatformBuiltByDefault(t *testing.T) {
	if got, want := slices.Sorted(maps.Keys(optionalPlatforms)), omittablePlatforms; !slices.Equal(got, want) {
		t.Errorf("platform_*.go register %v, omittablePlatforms lists %v", got, want)
	}
	r := newChannelRegistry()
	// The web chat, Telegram, Slack and Feishu are always in.
	if n, want := len(r.Names()), 4+len(omittablePlatforms); n != want {
		t.Errorf("%d platforms registered, want %d: %v", n, want, r.Names())
	}
	types := r.ConfigTypes()
	for _, name := range r.Names() {
		if types[name] == nil {
			t.Errorf("%s has no config type (registered as not built?)", name)
		}
	}
}

// omitAllTags is the build tag list that leaves out every platform it can.
func omitAllTags() string {
	tags := []string{"goolm"}
	for _, name := range omittablePlatforms {
		tags = append(tags, "nanobot_omit_"+name)
	}
	return strings.Join(tags, ",")
}

// A binary built with every nanobot_omit_* tag starts with the platforms
// it has, says which tags made it, and refuses to start a platform it was
// built without, naming the tag.
func TestBinaryWithPlatformsLeftOut(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary; skipped with -short")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "nanobot-slim")
	tags := omitAllTags()
	if out, err := exec.Command("go", "build", "-tags", tags, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags %s: %v\n%s", tags, err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.Contains(string(out), "nanobot_omit_whatsapp") {
		t.Errorf("version: %v\n%s", err, out)
	}

	port := freePort(t)
	cfg := filepath.Join(dir, "config.json")
	write := func(channels string) {
		t.Helper()
		body := fmt.Sprintf(`{"agents": {"defaults": {"model": "m", "provider": "vllm"}},
		  "providers": {"vllm": {"apiBase": "http://127.0.0.1:9/v1"}},
		  "gateway": {"port": %d, "heartbeat": {"enabled": false}},
		  "channels": %s}`, port, channels)
		if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	write(`{"whatsapp": {"enabled": true, "allowFrom": ["*"]}}`)
	var stderr bytes.Buffer
	gw := exec.Command(bin, "gateway", "--config", cfg)
	gw.Env = append(os.Environ(), "HOME="+dir)
	gw.Stderr = &stderr
	err = gw.Run()
	if err == nil || !strings.Contains(stderr.String(), "channels.whatsapp: this nanobot was built without it (go build -tags nanobot_omit_whatsapp)") {
		t.Errorf("gateway with WhatsApp enabled in a build without it: %v\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "unknown channel") {
		t.Errorf("the config check calls a platform left out of the build unknown:\n%s", stderr.String())
	}
	// status and doctor say so before anyone tries to start it.
	run := func(args ...string) string {
		cmd := exec.Command(bin, append(args, "--config", cfg)...)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if out := run("status"); !strings.Contains(out, "whatsapp     enabled, but the gateway cannot start it: channels.whatsapp: this nanobot was built without it") {
		t.Errorf("status does not say WhatsApp is missing from the build:\n%s", out)
	}
	if out := run("doctor"); !strings.Contains(out, "[RISK] channels.whatsapp: this nanobot was built without it (go build -tags nanobot_omit_whatsapp)") {
		t.Errorf("doctor does not flag WhatsApp missing from the build:\n%s", out)
	}

	write(`{}`) // the web chat only
	startBinaryGateway(t, bin, cfg, port)
}
