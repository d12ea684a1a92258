package registry

import "testing"

func TestValidSlug(t *testing.T) {
	for s, want := range map[string]bool{
		"weather": true, "tide-tables": true, "a1.b_c": true, "9lives": true,
		"": false, ".hidden": false, "-x": false, "Upper": false, "a/b": false, "a..b": false, "../x": false,
		"x y": false, string(make([]byte, 65)): false,
	} {
		if got := ValidSlug(s); got != want {
			t.Errorf("ValidSlug(%q) = %v, want %v", s, got, want)
		}
	}
	long := "a"
	for len(long) < 64 {
		long += "b"
	}
	if !ValidSlug(long) || ValidSlug(long+"c") {
		t.Error("the 64-character limit is off")
	}
}
