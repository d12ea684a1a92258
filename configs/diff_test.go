package configs

import (
	"slices"
	"testing"
)

func TestDiffNamesWhatChangedNotItsValue(t *testing.T) {
	a := Default()
	b := Default()
	if got := Diff(&a, &b); len(got) != 0 {
		t.Fatalf("Diff of equal configs = %q", got)
	}
	b.Agents.Defaults.Model = "other/model"
	b.Gateway.Heartbeat.IntervalS = 7
	b.Channels.Platforms = map[string]map[string]any{"telegram": {"enabled": true, "token": "123:secret", "allowFrom": []any{"42"}}}
	got := Diff(&a, &b)
	for _, want := range []string{"agents.defaults.model", "gateway.heartbeat.intervalS", "channels.telegram"} {
		if !slices.Contains(got, want) {
			t.Errorf("Diff = %q, want %q in it", got, want)
		}
	}
	for _, p := range got {
		if p == "123:secret" || slices.Contains([]string{"42"}, p) {
			t.Errorf("Diff leaked a value: %q", got)
		}
	}
	// A change inside an existing channel is named to the key.
	c := b
	c.Channels.Platforms = map[string]map[string]any{"telegram": {"enabled": true, "token": "123:secret", "allowFrom": []any{"42", "43"}}}
	if got := Diff(&b, &c); !slices.Equal(got, []string{"channels.telegram.allowFrom"}) {
		t.Errorf("Diff = %q, want [channels.telegram.allowFrom]", got)
	}
}

func TestMatchSetting(t *testing.T) {
	for _, tc := range []struct {
		pattern, setting string
		want             bool
	}{
		{"channels.*.allowFrom", "channels.telegram.allowFrom", true},
		{"channels.*.allowFrom", "channels.telegram.token", false},
		{"channels.*.allowFrom", "channels.telegram", false},
		{"agents.defaults.model", "agents.defaults.model", true},
	} {
		if got := MatchSetting(tc.pattern, tc.setting); got != tc.want {
			t.Errorf("MatchSetting(%q, %q) = %v", tc.pattern, tc.setting, got)
		}
	}
}
