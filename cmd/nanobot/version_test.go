package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	vcs := &debug.BuildInfo{
		Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "-tags", Value: "goolm"},
			{Key: "vcs.revision", Value: "0123abcd"},
			{Key: "vcs.time", Value: "2026-03-01T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	for _, tc := range []struct {
		name                  string
		ldVer, ldCommit, ldDt string
		bi                    *debug.BuildInfo
		want                  buildStamp
	}{
		{"release ldflags win over VCS", "v1.2.3", "feedbeef", "2026-04-01T00:00:00Z", vcs,
			buildStamp{Version: "v1.2.3", Commit: "feedbeef", Date: "2026-04-01T00:00:00Z", Tags: "goolm"}},
		{"no ldflags: VCS info", "", "", "", vcs,
			buildStamp{Version: "dev", Commit: "0123abcd", Date: "2026-03-01T10:00:00Z", Modified: true, Tags: "goolm"}},
		{"go install module@version", "", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}},
			buildStamp{Version: "v0.9.0"}},
		{"nothing recorded", "", "", "", nil, buildStamp{Version: "dev"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describeBuild(tc.ldVer, tc.ldCommit, tc.ldDt, tc.bi); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestVersionOutput(t *testing.T) {
	out := buildStamp{Version: "v1.2.3", Commit: "feedbeef", Modified: true, Tags: "goolm"}.String()
	for _, want := range []string{"nanobot v1.2.3 (go", "commit: feedbeef (modified)", "built:  unknown", "tags:   goolm"} {
		if !strings.Contains(out, want) {
			t.Errorf("version output lacks %q:\n%s", want, out)
		}
	}
}
