package configs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// PythonDefaultWorkspace is the Python nanobot's default workspace.
const PythonDefaultWorkspace = "~/.nanobot/workspace"

// KeyReport is what happens to one key of a Python nanobot config.
type KeyReport struct {
	// Path is the key's dotted path in the file as written.
	Path   string
	Status CompatStatus
	// Note says what happens instead, or where the key went.
	Note string
}

// PythonMigration is the result of reading a Python nanobot config: a
// verdict for every key in it, and the config this program would use.
type PythonMigration struct {
	Keys []KeyReport
	// Output is the migrated config.json: canonical key spellings, keys
	// moved to their current places, options with no counterpart removed
	// (each is in Keys). ${VAR} references are kept as written.
	Output []byte
}

// Counts returns how many keys have each status.
func (m *PythonMigration) Counts() map[CompatStatus]int {
	out := map[CompatStatus]int{}
	for _, k := range m.Keys {
		out[k.Status]++
	}
	return out
}

// MigratePython reads a Python nanobot config.json and reports, key by key,
// what carries over, what changes meaning and what is unsupported. Every
// key of the input is in the report: none is dropped silently. platforms
// is as in Options. It does no IO; a file that is not a JSON object, or has
// values of the wrong type, is an error naming the paths.
func MigratePython(data []byte, platforms map[string]any) (*PythonMigration, error) {
	tree, err := parseJSON(data)
	if err != nil {
		return nil, err
	}
	var leaves []string
	collectLeaves(tree, "", &leaves)

	moved := migrate(tree)
	findings := applyCompat(tree, platforms)
	ck := &checker{platforms: platforms}
	ck.check("", tree, reflect.TypeFor[Config]())
	if len(ck.errs) > 0 {
		return nil, &Error{File: "(python config)", Problems: ck.errs}
	}
	unknown := map[string]string{}
	for _, w := range ck.warnings {
		if p, msg, ok := strings.Cut(w, ": "); ok && slices.Contains(ck.unknown, p) {
			unknown[p] = msg
		}
	}
	// Options with no counterpart here are left out of the output (the
	// report names each); a platform this build lacks is kept.
	for _, p := range ck.unknown {
		deletePath(tree, p)
	}
	movedFrom := map[string]string{}
	for _, m := range moved {
		if from, to, ok := strings.Cut(m, " -> "); ok {
			movedFrom[from] = to
		}
	}

	// Ahead of the others: for channels.transcriptionProvider it says
	// whether the provider works, not only where it went.
	tf, treports := transcriptionFindings(tree)
	findings = append(tf, findings...)
	m := &PythonMigration{}
	for _, leaf := range leaves {
		m.Keys = append(m.Keys, classify(leaf, findings, movedFrom, unknown))
	}
	m.Keys = append(m.Keys, treports...)
	// The Python nanobot's workspace defaults to ~/.nanobot/workspace
	// wherever the config is; here it is the folder beside config.json.
	// Write it out so the same workspace is used.
	if d := lookupMap(tree, []string{"agents", "defaults"}, true); d != nil {
		if _, ok := findKey(d, "workspace"); !ok {
			d["workspace"] = PythonDefaultWorkspace
			m.Keys = append(m.Keys, KeyReport{Path: "agents.defaults.workspace", Status: CompatSame,
				Note: "not set: the Python nanobot's default " + PythonDefaultWorkspace + " is written out (the default here is the folder beside config.json)"})
		}
	}
	out, err := json.Marshal(tree)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, out, "", "  "); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	m.Output = buf.Bytes()
	return m, nil
}

// classify finds the verdict for one leaf path of the input. Paths are
// compared in normalised spelling, since the input may use snake_case.
func classify(leaf string, findings []CompatFinding, movedFrom, unknown map[string]string) KeyReport {
	norm := normPath(leaf)
	under := func(p string) bool {
		np := normPath(p)
		return norm == np || strings.HasPrefix(norm, np+".")
	}
	// The most specific finding wins: "channels.slack.dm.allowFrom" over
	// "channels.slack.dm".
	best := -1
	for i, f := range findings {
		if under(f.Path) && (best < 0 || len(f.Path) > len(findings[best].Path)) {
			best = i
		}
	}
	if best >= 0 {
		f := findings[best]
		return KeyReport{Path: leaf, Status: f.Status, Note: f.Msg}
	}
	for from, to := range movedFrom {
		if under(from) {
			return KeyReport{Path: leaf, Status: CompatSame, Note: "moved to " + to}
		}
	}
	for p, msg := range unknown {
		if under(p) {
			return KeyReport{Path: leaf, Status: CompatUnsupported, Note: "no such option here, left out of the migrated file (" + msg + ")"}
		}
	}
	return KeyReport{Path: leaf, Status: CompatSame}
}

func normPath(p string) string {
	segs := strings.Split(p, ".")
	for i, s := range segs {
		segs[i] = normKey(s)
	}
	return strings.Join(segs, ".")
}

// collectLeaves lists the dotted paths of every value that is not a
// non-empty object; arrays count as one value.
func collectLeaves(node map[string]any, prefix string, out *[]string) {
	keys := make([]string, 0, len(node))
	for k := range node {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := join(prefix, k)
		if child, ok := node[k].(map[string]any); ok && len(child) > 0 {
			collectLeaves(child, p, out)
			continue
		}
		*out = append(*out, p)
	}
}

// FormatReport writes the report as aligned text, grouped by status.
func (m *PythonMigration) FormatReport() string {
	var b strings.Builder
	for _, st := range []CompatStatus{CompatSame, CompatChanged, CompatUnsupported} {
		var rows []KeyReport
		for _, k := range m.Keys {
			if k.Status == st {
				rows = append(rows, k)
			}
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s (%d):\n", st, len(rows))
		for _, r := range rows {
			if r.Note == "" {
				fmt.Fprintf(&b, "  %s\n", r.Path)
			} else {
				fmt.Fprintf(&b, "  %s — %s\n", r.Path, r.Note)
			}
		}
	}
	return b.String()
}
