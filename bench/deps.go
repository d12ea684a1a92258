package main

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// depSize is what one module adds to the binary.
type depSize struct {
	Module string
	Bytes  int64
}

// depReport is the binary's file-backed symbol bytes by module, plus what
// no module owns (function metadata, the line table, string data).
type depReport struct {
	Mods      []depSize
	Symbols   int64 // bytes of all file-backed symbols
	Pclntab   int64 // the .gopclntab section (function names and line tables)
	Unowned   int64 // symbols no module path matches (go:func.*, go:string.*, ...)
	FileBytes int64
	// Inits is what each module's package initialisers cost at start.
	Inits []initCost
}

// measureDeps builds the binary with its symbol table (the release flags
// minus -s; the symbols are the same as in the stripped build) and sums
// the sizes of its file-backed symbols by the module their package belongs
// to — what `go tool nm -size -sort size` lists, aggregated. Uninitialised
// data (.bss) is left out: it costs address space, not file bytes.
func measureDeps(r *report, work string) error {
	bin := filepath.Join(work, "nanobot-symbols")
	cmd := exec.Command("go", "build", "-tags", "goolm", "-trimpath", "-ldflags", "-w", "-o", bin, "./cmd/nanobot")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", "./cmd/nanobot").Output()
	if err != nil {
		return fmt.Errorf("go list: %w", err)
	}
	mods := strings.Fields(string(out))
	d, err := depSizes(bin, mods)
	if err != nil {
		return err
	}
	r.Deps, r.symBin, r.mods = d, bin, mods
	if d.Inits, err = measureInits(bin, mods, 5); err != nil {
		return err
	}
	return nil
}

// depSizes reads bin's ELF symbol table and attributes every file-backed
// symbol to the longest module path in mods that prefixes its package, or
// to "std" for the standard library and runtime.
func depSizes(bin string, mods []string) (*depReport, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("%s has no symbol table (built with -s?): %w", bin, err)
	}
	st, _ := os.Stat(bin)
	d := &depReport{FileBytes: st.Size()}
	if s := f.Section(".gopclntab"); s != nil {
		d.Pclntab = int64(s.Size)
	}
	sort.Slice(mods, func(i, j int) bool { return len(mods[i]) > len(mods[j]) })
	by := map[string]int64{}
	for _, s := range syms {
		if s.Size == 0 || int(s.Section) >= len(f.Sections) || s.Section == elf.SHN_UNDEF {
			continue
		}
		if f.Sections[s.Section].Type == elf.SHT_NOBITS {
			continue
		}
		d.Symbols += int64(s.Size)
		mod := moduleOf(s.Name, mods)
		if mod == "" {
			d.Unowned += int64(s.Size)
			continue
		}
		by[mod] += int64(s.Size)
	}
	for m, b := range by {
		d.Mods = append(d.Mods, depSize{m, b})
	}
	sort.Slice(d.Mods, func(i, j int) bool { return d.Mods[i].Bytes > d.Mods[j].Bytes })
	return d, nil
}

// moduleOf names the module a symbol's package belongs to: one of mods,
// "std" for the standard library (vendored copies included), or "" when
// the name carries no package (go:func.*, go:string.*).
func moduleOf(sym string, mods []string) string {
	name := sym
	for _, p := range []string{"type:", "go:itab.", "go:link.", "go:info."} {
		name = strings.TrimPrefix(name, p)
	}
	name = strings.TrimLeft(name, "*[]")
	if strings.HasPrefix(name, "go:") || strings.HasPrefix(name, "gclocals") || name == "" {
		return ""
	}
	// The package path ends at the first dot after the last slash, before
	// any type arguments or, in an itab, the interface.
	pkg := name
	if i := strings.IndexAny(pkg, "[,"); i >= 0 {
		pkg = pkg[:i]
	}
	slash := strings.LastIndex(pkg, "/")
	if i := strings.IndexByte(pkg[slash+1:], '.'); i >= 0 {
		pkg = pkg[:slash+1+i]
	}
	for _, m := range mods {
		if pkg == m || strings.HasPrefix(pkg, m+"/") {
			return m
		}
	}
	if !strings.Contains(strings.SplitN(pkg, "/", 2)[0], ".") || strings.HasPrefix(pkg, "vendor/") {
		return "std"
	}
	return ""
}

// depsMarkdown writes the bytes-per-module table.
func (r *report) depsMarkdown(w func(string, ...any)) {
	d := r.Deps
	if d == nil {
		return
	}
	mib := func(b int64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }
	w("\n## What each dependency costs\n\n")
	w("The file-backed symbols of the release build (the same build with its symbol table kept: `-ldflags -w` instead of `-s -w`), summed by the module of their package — `go tool nm -size -sort size` aggregated by `bench/deps.go`; run `go run ./bench -only deps` to weigh a change. ")
	w("Symbols: %s of the %s binary; function metadata and string data that name no package (`go:func.*`, `go:string.*`): %s. ", mib(d.Symbols), mib(d.FileBytes), mib(d.Unowned))
	w("Not in the symbols: the function and line table (`.gopclntab`, %s), which grows with every function linked, so each module costs roughly its code share of it on top.\n\n", mib(d.Pclntab))
	w("| module | bytes | share of symbols |\n|---|---|---|\n")
	var rest int64
	n := 0
	for _, m := range d.Mods {
		if n >= 25 {
			rest += m.Bytes
			continue
		}
		n++
		w("| %s | %s | %.1f%% |\n", m.Module, mib(m.Bytes), 100*float64(m.Bytes)/float64(d.Symbols))
	}
	if rest > 0 {
		w("| %d more modules | %s | %.1f%% |\n", len(d.Mods)-n, mib(rest), 100*float64(rest)/float64(d.Symbols))
	}
	if len(d.Inits) == 0 {
		return
	}
	var ms float64
	var bytes, allocs int64
	for _, c := range d.Inits {
		ms, bytes, allocs = ms+c.Ms, bytes+c.Bytes, allocs+c.Allocs
	}
	w("\nWhat the package initialisers cost at every start, whatever is enabled (`GODEBUG=inittrace=1 nanobot version`, mean of 5; clock time on a shared machine is noisy): %.1f ms, %.1f MB allocated in %d allocations in all. The 12 costliest modules:\n\n", ms, float64(bytes)/1e6, allocs)
	w("| module | ms | bytes | allocations |\n|---|---|---|---|\n")
	for i, c := range d.Inits {
		if i == 12 {
			break
		}
		w("| %s | %.1f | %d | %d |\n", c.Module, c.Ms, c.Bytes, c.Allocs)
	}
}

// initCost is what one module's package initialisers cost at every start.
type initCost struct {
	Module        string
	Ms            float64
	Bytes, Allocs int64
}

// measureInits runs `bin version` runs times with GODEBUG=inittrace=1 and
// averages the initialisers' clock time, bytes and allocations by module.
func measureInits(bin string, mods []string, runs int) ([]initCost, error) {
	by := map[string]*initCost{}
	for range runs {
		cmd := exec.Command(bin, "version")
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("%s version: %w", bin, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			// init github.com/x/y @12 ms, 0.5 ms clock, 1024 bytes, 12 allocs
			f := strings.Fields(line)
			if len(f) < 10 || f[0] != "init" {
				continue
			}
			m := moduleOf(f[1]+".init", mods)
			if m == "" {
				m = "(other)"
			}
			c := by[m]
			if c == nil {
				c = &initCost{Module: m}
				by[m] = c
			}
			ms, _ := strconv.ParseFloat(f[4], 64)
			b, _ := strconv.ParseInt(f[7], 10, 64)
			a, _ := strconv.ParseInt(f[9], 10, 64)
			c.Ms += ms / float64(runs)
			c.Bytes += b / int64(runs)
			c.Allocs += a / int64(runs)
		}
	}
	var out []initCost
	for _, c := range by {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ms > out[j].Ms })
	return out, nil
}
