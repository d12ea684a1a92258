package testproc

import (
	"fmt"
	"testing"
)

// recorder is a testing.TB that notes how Missing ended the test.
type recorder struct {
	testing.TB
	ended string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Fatalf(f string, args ...any) { r.ended = "fail: " + fmt.Sprintf(f, args...) }
func (r *recorder) Skipf(f string, args ...any)  { r.ended = "skip: " + fmt.Sprintf(f, args...) }

// TestMissing: a missing part fails the test under CI and skips it
// elsewhere, naming the part either way.
func TestMissing(t *testing.T) {
	for ci, want := range map[string]string{
		"":     "skip: ngircd is not installed",
		"true": "fail: CI is set but ngircd is not installed",
	} {
		t.Setenv("CI", ci)
		r := &recorder{TB: t}
		Missing(r, "%s is not installed", "ngircd")
		if r.ended != want {
			t.Errorf("CI=%q: %q, want %q", ci, r.ended, want)
		}
	}
}
