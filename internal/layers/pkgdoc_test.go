package layers

import (
	"bufio"
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// sharesState matches code that shares state between goroutines: locks,
// atomics, wait groups, goroutines started.
var sharesState = regexp.MustCompile(`\bsync\.(Mutex|RWMutex|WaitGroup|Once|Map|Cond)\b|\batomic\.|\bgo func\b|\bgo [a-z]\w*(\.\w+)*\(`)

// statesRules matches a doc that states its concurrency rules.
var statesRules = regexp.MustCompile(`(?i)concurren|safe for|goroutine|not safe|one caller|single-threaded`)

// TestEveryPackageSaysWhatItIsFor: every package has a doc comment that
// begins "Package <name>" (commands say what they do), and a package that
// shares state between goroutines states its concurrency rules.
func TestEveryPackageSaysWhatItIsFor(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", "goolm", "-f", "{{.Dir}} {{.Name}} {{.ImportPath}} {{join .GoFiles \",\"}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue // no non-test files
		}
		dir, name, path := f[0], f[1], strings.TrimPrefix(f[2], module)
		n++
		var doc string
		shares := false
		for _, file := range strings.Split(f[3], ",") {
			src, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatal(err)
			}
			if sharesState.Match(src) {
				shares = true
			}
			af, err := parser.ParseFile(token.NewFileSet(), file, src, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if af.Doc != nil {
				doc += af.Doc.Text()
			}
		}
		switch {
		case doc == "":
			t.Errorf("%s: no package doc (a doc.go saying what it is for)", path)
		case name != "main" && !strings.HasPrefix(doc, "Package "+name+" "):
			t.Errorf("%s: package doc begins %q, want \"Package %s ...\"", path, firstLine(doc), name)
		case shares && !statesRules.MatchString(doc):
			t.Errorf("%s: shares state between goroutines, but its package doc states no concurrency rules", path)
		}
	}
	if n < 50 {
		t.Fatalf("checked %d packages; expected the whole module", n)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
