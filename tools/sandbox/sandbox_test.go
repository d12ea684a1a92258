package sandbox

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/tools/sandbox/sandboxtest"
)

func TestCancelKillsWholeGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd, err := Command(ctx, Spec{
		Path:     "sh",
		Args:     []string{"-c", "sleep 1000 & echo $! > " + pidFile + "; wait"},
		Dir:      dir,
		Writable: []string{dir},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(sandboxtest.WaitFile(t, pidFile, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after cancel")
	}
	sandboxtest.WaitGone(t, pid, 10*time.Second)
}

func TestKillGroupAfterLeaderExit(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	cmd, err := Command(context.Background(), Spec{
		Path:      "sh",
		Args:      []string{"-c", "sleep 1000 > /dev/null 2>&1 & echo $! > " + pidFile},
		Writable:  []string{dir},
		WaitDelay: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(sandboxtest.WaitFile(t, pidFile, 10*time.Second))
	if sandboxtest.Gone(pid) {
		t.Fatal("background child died with its leader; test premise broken")
	}
	if err := KillGroup(cmd); err != nil {
		t.Fatalf("KillGroup: %v", err)
	}
	sandboxtest.WaitGone(t, pid, 10*time.Second)
	if err := KillGroup(cmd); err != nil {
		t.Errorf("second KillGroup = %v, want nil", err)
	}
}

func TestEnvNotInherited(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-secret")
	t.Setenv("NANOBOT_EXTRA", "passed")
	tests := []struct {
		name    string
		env     []string
		want    []string
		wantNot []string
	}{
		{"nil env is the base set", nil, []string{"PATH="}, []string{"OPENAI_API_KEY", "NANOBOT_EXTRA"}},
		{"explicit env", BaseEnv("/work/home", "NANOBOT_EXTRA"), []string{"HOME=/work/home", "NANOBOT_EXTRA=passed"}, []string{"OPENAI_API_KEY"}},
		{"extra with value", BaseEnv("", "FOO=bar", "UNSET_KEY_XYZ"), []string{"FOO=bar"}, []string{"OPENAI_API_KEY", "UNSET_KEY_XYZ"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			cmd, err := Command(context.Background(), Spec{Path: "env", Env: tt.env, Stdout: &out})
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Run(); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("env lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(out.String(), w) {
					t.Errorf("env leaks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestModes(t *testing.T) {
	// TestMain called Init: auto is Landlock wherever the kernel has it.
	strongest := ModeNone
	if LandlockABI() >= 1 {
		strongest = ModeLandlock
	}
	for m, want := range map[Mode]Mode{"": strongest, ModeAuto: strongest, ModeNone: ModeNone} {
		if got, err := ResolveMode(m); err != nil || got != want {
			t.Errorf("ResolveMode(%q) = %q, %v; want %q", m, got, err, want)
		}
	}
	if got, err := ResolveMode(ModeLandlock); (err == nil) != (strongest == ModeLandlock) || (err == nil && got != ModeLandlock) {
		t.Errorf("ResolveMode(landlock) = %q, %v with Landlock ABI %d", got, err, LandlockABI())
	}
	// Without Init, the executable cannot be the helper: auto falls back
	// and an explicit landlock is refused rather than run unconfined.
	helperReady.Store(false)
	defer helperReady.Store(true)
	if got, _ := ResolveMode(ModeAuto); got != ModeNone {
		t.Errorf("auto without Init = %q, want none", got)
	}
	for _, m := range []Mode{ModeLandlock, ModeBwrap, "docker"} {
		_, err := Command(context.Background(), Spec{Path: "true", Mode: m})
		if !errors.Is(err, ErrUnsupportedMode) {
			t.Errorf("Command(mode %q) error = %v, want ErrUnsupportedMode", m, err)
		}
	}
	if _, err := Command(context.Background(), Spec{}); err == nil {
		t.Error("Command with empty path: want error")
	}
	if _, err := Command(context.Background(), Spec{Path: "no-such-program-xyz"}); err == nil {
		t.Error("Command with unknown program: want error")
	}
}

func TestSetEnv(t *testing.T) {
	got := SetEnv([]string{"A=1", "HOME=/x", "B=2"}, "HOME", "/y")
	want := []string{"A=1", "B=2", "HOME=/y"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("SetEnv() = %v, want %v", got, want)
	}
}
