package skills

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func TestDisabledAndOnly(t *testing.T) {
	ws := t.TempDir()
	for _, n := range []string{"alpha", "beta", "gamma"} {
		writeSkill(t, ws, n, skillDoc("description: "+n+" things", "Use "+n+"."))
	}
	l := New(Options{Workspace: ws, Builtin: fstest.MapFS{}, Disabled: []string{"beta"}, Only: []string{"alpha", "beta"}})
	if got, want := names(l.Skills()), []string{"alpha@workspace"}; !slices.Equal(got, want) {
		t.Fatalf("used skills: got %v, want %v", got, want)
	}
	if idx := l.Index(); strings.Contains(idx, "beta") || strings.Contains(idx, "gamma") {
		t.Fatalf("index lists a skill that is off:\n%s", idx)
	}
	offs := map[string]string{}
	for _, s := range l.All() {
		offs[s.Name] = s.Off
	}
	if offs["beta"] != "disabled" || offs["gamma"] == "" || offs["alpha"] != "" {
		t.Fatalf("Off: got %v", offs)
	}
	l.SetDisabled(nil)
	if got, want := names(l.Skills()), []string{"alpha@workspace", "beta@workspace"}; !slices.Equal(got, want) {
		t.Fatalf("after SetDisabled(nil): got %v, want %v", got, want)
	}
}
