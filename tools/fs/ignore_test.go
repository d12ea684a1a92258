package fs

import "testing"

func TestIgnoreFileMatch(t *testing.T) {
	f := parseIgnore([]byte(`# comment
*.log
!keep.log
build/
/root-only.txt
docs/*.tmp
gen/**
!gen/keep.go
\#hash
trailing   
`))
	tests := []struct {
		rel     string
		isDir   bool
		ignored bool
		decided bool
	}{
		{"a.log", false, true, true},
		{"deep/down/a.log", false, true, true},
		{"keep.log", false, false, true},
		{"build", true, true, true},
		{"build", false, false, false}, // a file named build: the rule is for folders
		{"src/build", true, true, true},
		{"root-only.txt", false, true, true},
		{"sub/root-only.txt", false, false, false},
		{"docs/x.tmp", false, true, true},
		{"other/docs/x.tmp", false, false, false},
		{"gen", true, false, false}, // gen/** is what is inside
		{"gen/a.go", false, true, true},
		{"gen/keep.go", false, false, true},
		{"#hash", false, true, true},
		{"trailing", false, true, true},
		{"main.go", false, false, false},
	}
	for _, tt := range tests {
		ignored, decided := f.match(tt.rel, tt.isDir)
		if ignored != tt.ignored || decided != tt.decided {
			t.Errorf("match(%q, dir=%v) = %v, %v; want %v, %v", tt.rel, tt.isDir, ignored, decided, tt.ignored, tt.decided)
		}
	}
}

// Deeper .gitignore files override shallower ones; the ones above the
// walk's root apply with the root's path prefixed.
func TestIgnorerLayers(t *testing.T) {
	ig := &ignorer{
		outer: []scopedIgnore{{file: parseIgnore([]byte("*.gen\nsrc/vendor/\n")), prefix: "src"}},
		inner: map[string]*ignoreFile{
			".":   parseIgnore([]byte("secret.txt\n")),
			"pkg": parseIgnore([]byte("!keep.gen\n")),
		},
	}
	tests := []struct {
		rel   string
		isDir bool
		want  bool
	}{
		{"a.gen", false, true},
		{"pkg/keep.gen", false, false},
		{"pkg/other.gen", false, true},
		{"vendor", true, true},
		{"pkg/vendor", true, false},
		{"secret.txt", false, true},
		{"pkg/secret.txt", false, true},
		{"node_modules", true, true},
		{"node_modules", false, false},
		{"main.go", false, false},
	}
	for _, tt := range tests {
		if got := ig.skip(tt.rel, tt.isDir); got != tt.want {
			t.Errorf("skip(%q, dir=%v) = %v, want %v", tt.rel, tt.isDir, got, tt.want)
		}
	}
}
