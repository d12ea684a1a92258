package layers

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/nanobot-go/nanobot/"

// A rule names the packages of one layer (a path and everything under it)
// and the module packages they may import, as path prefixes. Packages
// outside the module are not checked, and a package may always import the
// packages under its own path.
type rule struct {
	layer string
	may   []string
}

// base is what every layer may import: the shared vocabulary and leaves.
var base = []string{"bus", "configs", "internal"}

// rules encode the layers of docs/architecture.md, top to bottom:
//
//	cmd -> gateway -> {gateway/relay, agent} -> {channels, tools, providers} -> {bus, configs, internal}
//
// The most specific layer wins (gateway/relay before gateway).
var rules = []rule{
	{"cmd", []string{""}}, // the wiring: everything
	{"bench", []string{""}},
	{"deploy", base}, // the deployment files' tests
	// The conformance suite drives an adapter through the real runtime,
	// as the gateway will; only adapters' tests import it.
	{"channels/channeltest", with("channels", "gateway/relay")},
	{"gateway/relay", with("channels")},
	{"gateway", with("gateway", "agent", "tools", "providers",
		// the kit, never a platform: cmd alone knows the adapters
		"channels/media", "channels/markdown", "channels/kit", "channels!")},
	{"agent", with("agent", "tools", "providers")},
	{"tools", with("tools", "providers")},
	{"channels", with("channels")},
	{"providers", with("providers")},
	{"bus", []string{"bus"}},
	{"configs", []string{"configs", "internal"}},
	{"internal", []string{"internal"}},
}

func with(more ...string) []string { return append(slices.Clone(base), more...) }

// ruleFor returns the most specific rule for package pkg (module-relative).
func ruleFor(pkg string) (rule, bool) {
	best, found := rule{}, false
	for _, r := range rules {
		if under(pkg, r.layer) && (!found || len(r.layer) > len(best.layer)) {
			best, found = r, true
		}
	}
	return best, found
}

// under reports whether pkg is prefix or below it; a prefix ending in "!"
// matches that package only, "" matches everything.
func under(pkg, prefix string) bool {
	if p, exact := strings.CutSuffix(prefix, "!"); exact {
		return pkg == p
	}
	return prefix == "" || pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
}

// violations returns the imports in graph (module-relative package ->
// its module-relative imports) that its rules forbid.
func violations(graph map[string][]string) []string {
	var bad []string
	for pkg, imps := range graph {
		r, ok := ruleFor(pkg)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: in no layer (add it to the rules and docs/architecture.md)", pkg))
			continue
		}
		for _, imp := range imps {
			if under(imp, pkg) || slices.ContainsFunc(r.may, func(p string) bool { return under(imp, p) }) {
				continue
			}
			bad = append(bad, fmt.Sprintf("%s imports %s (layer %s may import %s)", pkg, imp, r.layer, strings.Join(r.may, ", ")))
		}
	}
	slices.Sort(bad)
	return bad
}

// moduleGraph lists every package of the module with its non-test
// imports inside the module.
func moduleGraph(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-tags", "goolm", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		pkg := strings.TrimPrefix(f[0], module)
		graph[pkg] = nil
		for _, imp := range f[1:] {
			if rel, ok := strings.CutPrefix(imp, module); ok {
				graph[pkg] = append(graph[pkg], rel)
			}
		}
	}
	if len(graph) < 50 {
		t.Fatalf("go list found %d packages; expected the whole module", len(graph))
	}
	return graph
}

// TestImportsFollowTheLayers fails on an import that runs against the
// layers: a channel importing the gateway, the agent importing a
// platform, a leaf importing anything above it.
func TestImportsFollowTheLayers(t *testing.T) {
	for _, v := range violations(moduleGraph(t)) {
		t.Error(v)
	}
}

// The check catches what it is for: each of these edges, added to the
// real graph, is reported, and nothing else is.
func TestForbiddenImportsAreCaught(t *testing.T) {
	real := moduleGraph(t)
	for _, edge := range [][2]string{
		{"channels/telegram", "gateway"},
		{"channels/matrix", "gateway/outbox"},
		{"channels/media", "providers/tts"},
		{"tools/image", "agent/usage"},
		{"gateway", "channels/web"},
		{"agent", "channels/telegram"},
		{"agent", "gateway/relay"},
		{"bus", "configs"},
		{"internal/wal", "bus"},
		{"providers/openai", "tools"},
		{"gateway/relay", "agent"},
	} {
		graph := maps.Clone(real)
		graph[edge[0]] = slices.Clone(graph[edge[0]])
		graph[edge[0]] = append(graph[edge[0]], edge[1])
		got := violations(graph)
		if len(got) != 1 || !strings.HasPrefix(got[0], edge[0]+" imports "+edge[1]+" ") {
			t.Errorf("with %s -> %s added: violations %q, want that one", edge[0], edge[1], got)
		}
	}
}
