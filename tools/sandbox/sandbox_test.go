package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/tools/sandbox"
	"github.com/nanobot-go/nanobot/tools/sandbox/sandboxtest"
)

// variant is one way a child can be confined on this host.
type variant struct {
	name string
	mode sandbox.Mode
	// noNS turns the landlock mode's namespaces off.
	noNS bool
}

var variants = []variant{
	{"none", sandbox.ModeNone, false},
	{"landlock", sandbox.ModeLandlock, false},
	{"landlock-no-namespaces", sandbox.ModeLandlock, true},
	{"bwrap", sandbox.ModeBwrap, false},
}

// forVariants runs f for each variant the host provides (confining ones
// only with confining), skipping the others with the reason.
func forVariants(t *testing.T, confining bool, f func(t *testing.T, v variant)) {
	for _, v := range variants {
		if confining && v.mode == sandbox.ModeNone {
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			sandboxtest.Require(t, v.mode)
			if v.mode == sandbox.ModeLandlock && !v.noNS && !sandbox.Namespaces() {
				t.Skip("user namespaces do not work here: landlock runs without them (the landlock-no-namespaces case)")
			}
			if v.noNS {
				sandbox.NoNamespaces.Store(true)
				t.Cleanup(func() { sandbox.NoNamespaces.Store(false) })
			}
			f(t, v)
		})
	}
}

// namespaced reports whether v's sandbox has its own PID namespace, which
// ends with its command.
func (v variant) namespaced() bool {
	return v.mode == sandbox.ModeBwrap || v.mode == sandbox.ModeLandlock && !v.noNS
}

// run runs a shell command line under spec and returns its combined
// output.
func run(t *testing.T, spec sandbox.Spec, command string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	spec.Path, spec.Args = "sh", []string{"-c", command}
	spec.Stdout, spec.Stderr = &out, &out
	cmd, err := sandbox.Command(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Run()
	return out.String(), err
}

func realTempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCancelKillsWholeGroup(t *testing.T) {
	forVariants(t, false, func(t *testing.T, v variant) {
		dir := realTempDir(t)
		m := sandboxtest.Marker()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cmd, err := sandbox.Command(ctx, sandbox.Spec{
			Path: "sh", Args: []string{"-c", "sleep " + m + " & wait"},
			Dir: dir, Writable: []string{dir}, Mode: v.mode,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sandboxtest.WaitProcs(t, "sleep", m, 10*time.Second)
		cancel()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Wait did not return after cancel")
		}
		sandboxtest.WaitNoProcs(t, m, 10*time.Second)
	})
}

func TestKillGroupAfterLeaderExit(t *testing.T) {
	forVariants(t, false, func(t *testing.T, v variant) {
		dir := realTempDir(t)
		m := sandboxtest.Marker()
		cmd, err := sandbox.Command(context.Background(), sandbox.Spec{
			Path: "sh", Args: []string{"-c", "sleep " + m + " > /dev/null 2>&1 & echo started"},
			Writable: []string{dir}, Mode: v.mode, WaitDelay: 100 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		if v.namespaced() {
			// The sandbox's PID namespace ends with its command.
			sandboxtest.WaitNoProcs(t, m, 10*time.Second)
		} else {
			pids := sandboxtest.WaitProcs(t, "sleep", m, 10*time.Second)
			if sandboxtest.Gone(pids[0]) {
				t.Fatal("background child died with its leader; test premise broken")
			}
		}
		if err := sandbox.KillGroup(cmd); err != nil {
			t.Fatalf("KillGroup: %v", err)
		}
		sandboxtest.WaitNoProcs(t, m, 10*time.Second)
		if err := sandbox.KillGroup(cmd); err != nil {
			t.Errorf("second KillGroup = %v, want nil", err)
		}
	})
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
		{"explicit env", sandbox.BaseEnv("/work/home", "NANOBOT_EXTRA"), []string{"HOME=/work/home", "NANOBOT_EXTRA=passed"}, []string{"OPENAI_API_KEY"}},
		{"extra with value", sandbox.BaseEnv("", "FOO=bar", "UNSET_KEY_XYZ"), []string{"FOO=bar"}, []string{"OPENAI_API_KEY", "UNSET_KEY_XYZ"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			cmd, err := sandbox.Command(context.Background(), sandbox.Spec{Path: "env", Env: tt.env, Stdout: &out})
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
	// TestMain called Init: auto is Landlock wherever the kernel has it,
	// else bubblewrap where it works.
	strongest := sandbox.ModeNone
	_, bwrapErr := sandbox.Bwrap()
	switch {
	case sandbox.LandlockABI() >= 1:
		strongest = sandbox.ModeLandlock
	case bwrapErr == nil:
		strongest = sandbox.ModeBwrap
	}
	for m, want := range map[sandbox.Mode]sandbox.Mode{"": strongest, sandbox.ModeAuto: strongest, sandbox.ModeNone: sandbox.ModeNone} {
		if got, err := sandbox.ResolveMode(m); err != nil || got != want {
			t.Errorf("ResolveMode(%q) = %q, %v; want %q", m, got, err, want)
		}
	}
	if got, err := sandbox.ResolveMode(sandbox.ModeLandlock); (err == nil) != (sandbox.LandlockABI() >= 1) || (err == nil && got != sandbox.ModeLandlock) {
		t.Errorf("ResolveMode(landlock) = %q, %v with Landlock ABI %d", got, err, sandbox.LandlockABI())
	}
	if got, err := sandbox.ResolveMode(sandbox.ModeBwrap); (err == nil) != (bwrapErr == nil) || (err == nil && got != sandbox.ModeBwrap) {
		t.Errorf("ResolveMode(bwrap) = %q, %v; bubblewrap probe: %v", got, err, bwrapErr)
	}
	if d := sandbox.Describe(sandbox.ModeAuto); !strings.HasPrefix(d, string(strongest)) {
		t.Errorf("Describe(auto) = %q, want it to start with %q", d, strongest)
	}
	// Without Init, the executable cannot be the helper: auto falls back
	// and an explicit mode is refused rather than run unconfined.
	sandbox.HelperReady.Store(false)
	defer sandbox.HelperReady.Store(true)
	if got, _ := sandbox.ResolveMode(sandbox.ModeAuto); got != sandbox.ModeNone {
		t.Errorf("auto without Init = %q, want none", got)
	}
	for _, m := range []sandbox.Mode{sandbox.ModeLandlock, sandbox.ModeBwrap, "docker"} {
		_, err := sandbox.Command(context.Background(), sandbox.Spec{Path: "true", Mode: m})
		if !errors.Is(err, sandbox.ErrUnsupportedMode) {
			t.Errorf("Command(mode %q) error = %v, want ErrUnsupportedMode", m, err)
		}
	}
	if _, err := sandbox.Command(context.Background(), sandbox.Spec{}); err == nil {
		t.Error("Command with empty path: want error")
	}
	if _, err := sandbox.Command(context.Background(), sandbox.Spec{Path: "no-such-program-xyz"}); err == nil {
		t.Error("Command with unknown program: want error")
	}
}

func TestSetEnv(t *testing.T) {
	got := sandbox.SetEnv([]string{"A=1", "HOME=/x", "B=2"}, "HOME", "/y")
	want := []string{"A=1", "B=2", "HOME=/y"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("SetEnv() = %v, want %v", got, want)
	}
}
