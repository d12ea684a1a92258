package configs

import "testing"

func TestNormKey(t *testing.T) {
	for in, want := range map[string]string{"api_key": "apikey", "apiKey": "apikey", "Api-Key": "apikey", "allowFrom": "allowfrom"} {
		if got := normKey(in); got != want {
			t.Errorf("normKey(%q) = %q, want %q", in, got, want)
		}
	}
	// Loading a config normalises every key it checks; each call must not
	// build a replacer of its own.
	if n := testing.AllocsPerRun(100, func() { _ = normKey("max_Tool-Iterations") }); n > 2 {
		t.Errorf("normKey allocates %v times per call, want at most 2", n)
	}
}

func TestTrimCodePages(t *testing.T) {
	l, err := Load(Options{Path: writeConfig(t, `{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !l.Config.Gateway.TrimCodePages {
		t.Error("gateway.trimCodePages is off by default, want on")
	}
	l, err = Load(Options{Path: writeConfig(t, `{}`), Environ: []string{"NANOBOT_GATEWAY__TRIMCODEPAGES=false"}})
	if err != nil {
		t.Fatal(err)
	}
	if l.Config.Gateway.TrimCodePages || len(l.Warnings) > 0 {
		t.Errorf("trimCodePages = %v, warnings %v; want off from the environment, no warnings", l.Config.Gateway.TrimCodePages, l.Warnings)
	}
}
