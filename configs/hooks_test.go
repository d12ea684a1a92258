package configs

import (
	"strings"
	"testing"
)

func TestValidateHooks(t *testing.T) {
	ok := HookConfig{Name: "a", Points: []string{"before_tool"}, Command: []string{"hooks/a.sh"}}
	cases := []struct {
		name string
		hook HookConfig
		want string // "" : valid; else path and message fragment
	}{
		{"program", ok, ""},
		{"http with token", HookConfig{Name: "a", Points: []string{"before_reply"}, URL: "http://127.0.0.1:9/hook", Token: "t", Timeout: "800ms", OnFailure: "block"}, ""},
		{"no name", HookConfig{Points: ok.Points, Command: ok.Command}, "hooks[0].name: must not be empty"},
		{"no points", HookConfig{Name: "a", Command: ok.Command}, "hooks[0].points: list at least one"},
		{"unknown point", HookConfig{Name: "a", Points: []string{"before_llm"}, Command: ok.Command}, `hooks[0].points[0]: unknown point "before_llm"`},
		{"neither", HookConfig{Name: "a", Points: ok.Points}, "hooks[0].command: set command"},
		{"both", HookConfig{Name: "a", Points: ok.Points, Command: ok.Command, URL: "http://x"}, "hooks[0].command: set command or url, not both"},
		{"bad url", HookConfig{Name: "a", Points: ok.Points, URL: "ftp://x"}, "hooks[0].url: want an http"},
		{"token on a program", HookConfig{Name: "a", Points: ok.Points, Command: ok.Command, Token: "t"}, "hooks[0].token"},
		{"bad timeout", HookConfig{Name: "a", Points: ok.Points, Command: ok.Command, Timeout: "5"}, "hooks[0].timeout"},
		{"long timeout", HookConfig{Name: "a", Points: ok.Points, Command: ok.Command, Timeout: "1h"}, "hooks[0].timeout"},
		{"bad policy", HookConfig{Name: "a", Points: ok.Points, Command: ok.Command, OnFailure: "retry"}, "hooks[0].onFailure"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v validator
			v.hooks([]HookConfig{c.hook})
			var got []string
			for _, e := range v.errs {
				got = append(got, e.Path+": "+e.Msg)
			}
			joined := strings.Join(got, "\n")
			if c.want == "" && len(got) > 0 {
				t.Fatalf("errors %q, want none", joined)
			}
			if c.want != "" && !strings.Contains(joined, c.want) {
				t.Fatalf("errors %q, want %q", joined, c.want)
			}
		})
	}
	var v validator
	v.hooks([]HookConfig{ok, ok})
	if len(v.errs) != 1 || v.errs[0].Path != "hooks[1].name" {
		t.Errorf("a repeated name: %v", v.errs)
	}
}
