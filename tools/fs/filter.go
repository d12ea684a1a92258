package fs

import (
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// fileTypes maps grep's and find_files' "type" shorthands to file name
// patterns; any other value t means "*.t".
var fileTypes = map[string][]string{
	"go":         {"*.go"},
	"py":         {"*.py", "*.pyi"},
	"python":     {"*.py", "*.pyi"},
	"js":         {"*.js", "*.jsx", "*.mjs", "*.cjs"},
	"ts":         {"*.ts", "*.tsx", "*.mts", "*.cts"},
	"jsx":        {"*.jsx"},
	"tsx":        {"*.tsx"},
	"rs":         {"*.rs"},
	"rust":       {"*.rs"},
	"java":       {"*.java"},
	"c":          {"*.c", "*.h"},
	"cpp":        {"*.cpp", "*.cc", "*.cxx", "*.hpp", "*.hh", "*.h"},
	"sh":         {"*.sh", "*.bash"},
	"md":         {"*.md", "*.mdx"},
	"markdown":   {"*.md", "*.mdx"},
	"json":       {"*.json"},
	"yaml":       {"*.yaml", "*.yml"},
	"yml":        {"*.yaml", "*.yml"},
	"toml":       {"*.toml"},
	"sql":        {"*.sql"},
	"html":       {"*.html", "*.htm"},
	"css":        {"*.css", "*.scss", "*.sass"},
	"text":       {"*.txt"},
	"txt":        {"*.txt"},
	"dockerfile": {"Dockerfile", "*.dockerfile"},
}

// filter is the glob and type restriction of a search.
type filter struct {
	glob  string   // "" for none
	types []string // name patterns, nil for none
}

// newFilter checks a glob (doublestar syntax: "*.go", "src/**/*_test.go",
// "*.{ts,tsx}") and a type shorthand.
func newFilter(glob, typ string) (filter, error) {
	f := filter{glob: strings.TrimSpace(strings.ReplaceAll(glob, `\`, "/"))}
	if f.glob != "" && !doublestar.ValidatePattern(f.glob) {
		return filter{}, fmt.Errorf("glob %q is not a valid pattern", glob)
	}
	if t := strings.ToLower(strings.TrimSpace(typ)); t != "" {
		f.types = fileTypes[t]
		if f.types == nil {
			f.types = []string{"*." + strings.TrimPrefix(t, ".")}
		}
	}
	return f, nil
}

// fileMatches reports whether the file at rel (slash-separated, relative
// to the folder searched) passes. A glob with a "/" or starting with "**"
// matches the whole relative path; any other matches the name alone.
func (f filter) fileMatches(rel string) bool {
	return f.globMatches(rel) && f.typeMatches(path.Base(rel))
}

func (f filter) globMatches(rel string) bool {
	if f.glob == "" {
		return true
	}
	if strings.Contains(f.glob, "/") || strings.HasPrefix(f.glob, "**") {
		return doublestar.MatchUnvalidated(f.glob, rel)
	}
	return doublestar.MatchUnvalidated(f.glob, path.Base(rel))
}

func (f filter) typeMatches(name string) bool {
	if f.types == nil {
		return true
	}
	name = strings.ToLower(name)
	for _, p := range f.types {
		if doublestar.MatchUnvalidated(strings.ToLower(p), name) {
			return true
		}
	}
	return false
}
